package latencybench

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFloorProxyPassesTheExchangeThrough(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("upstream got %s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write(append([]byte("echo:"), body...))
	}))
	defer up.Close()
	proxy := httptest.NewServer(FloorProxy(up.Client(), up.URL+"/v1/chat/completions"))
	defer proxy.Close()

	res, err := http.Post(proxy.URL, "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTeapot || res.Header.Get("Content-Type") != "application/json" || string(body) != `echo:{"model":"m"}` {
		t.Errorf("got %d %q %q, want the upstream's 418, its Content-Type and its body", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}

func TestFloorProxyAnswers502WhenTheUpstreamIsGone(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	url := up.URL
	up.Close()
	proxy := httptest.NewServer(FloorProxy(http.DefaultClient, url))
	defer proxy.Close()

	res, err := http.Post(proxy.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", res.StatusCode)
	}
}
