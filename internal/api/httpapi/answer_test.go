package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
)

// A whole answer reaches the caller before the handler's bookkeeping ends (here: before the
// access line is written), unchunked, with its length.
func TestAWholeAnswerLeavesBeforeTheHandlerReturns(t *testing.T) {
	release := make(chan struct{})
	answer := `{"ok":true}`
	h := httpapi.AccessLog(slog.New(slog.NewTextHandler(io.Discard, nil)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.StartAnswer(w, len(answer))
		_, _ = io.WriteString(w, answer)
		httpapi.SendAnswer(w)
		<-release // the bookkeeping after the answer
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer close(release)

	got := make(chan string, 1)
	go func() {
		res, err := http.Get(srv.URL)
		if err != nil {
			got <- err.Error()
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.ContentLength != int64(len(answer)) || len(res.TransferEncoding) != 0 {
			got <- "not sent whole with its length"
			return
		}
		got <- string(b)
	}()
	select {
	case b := <-got:
		if b != answer {
			t.Fatalf("got %q, want %q", b, answer)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer was held until the handler returned")
	}
}
