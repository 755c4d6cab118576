// Command streamfn is a Lambda bootstrap for tests of the streaming adapter
// over the real runtime loop: it writes one SSE chunk, flushes, and waits for
// the test (GET $STREAMFN_RELEASE_URL, when set) before it writes the rest, so a
// test can see the first chunk arrive while the handler is still running.
//
// ?status=N sets the status; the path /interrupt ends the stream after the wait
// with an error frame, as the gateway's surfaces do; /abort panics after that
// frame, and /panic fails before anything is written.
package main

import (
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/secureai-gateway/gateway/internal/aws/awslambda"
)

func main() { awslambda.StartStreaming(http.HandlerFunc(serve)) }

func serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/panic" {
		panic("boom before headers")
	}
	status := http.StatusOK
	if s, err := strconv.Atoi(r.URL.Query().Get("status")); err == nil {
		status = s
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Add("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	w.WriteHeader(status)
	io.WriteString(w, "data: first\n\n")
	w.(http.Flusher).Flush()

	if url := os.Getenv("STREAMFN_RELEASE_URL"); url != "" {
		resp, err := http.Get(url)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	switch r.URL.Path {
	case "/interrupt":
		io.WriteString(w, "data: {\"error\":{\"message\":\"upstream cut\"}}\n\n")
		return
	case "/abort":
		io.WriteString(w, "data: {\"error\":{\"message\":\"upstream cut\"}}\n\n")
		panic(http.ErrAbortHandler)
	}
	io.WriteString(w, "data: second\n\n")
}
