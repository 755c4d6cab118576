package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// A streamed answer holds its status until its first content token is secured, so a chain that
// fails can still answer with the status it deserves; until then nothing is sent. API Gateway ends
// a streamed response that sends nothing for 5 minutes (a Regional endpoint's idle limit), and a
// long chain — several models, each up to its first-token timeout, with retries — can take longer
// than that to secure a first token. So in the cloud a stream still waiting after KeepAlive (the
// interval the request's context carries) is committed (200, text/event-stream) and sent an SSE
// comment, which every SSE client ignores, and another after each further interval; a chain that
// then fails ends the stream with the surface's error frame instead of an error status.

type keepAliveKey struct{}

// WithKeepAlive makes the streamed answers served under ctx send an SSE comment once they have
// waited every for their first content token, and again after each further every (0: never).
func WithKeepAlive(ctx context.Context, every time.Duration) context.Context {
	return context.WithValue(ctx, keepAliveKey{}, every)
}

// keepAliveComment is the comment frame a waiting stream sends.
var keepAliveComment = []byte(": waiting for the first token\n\n")

// AwaitFirstToken runs wait — a stream's chain, up to its first content token — in the caller's
// goroutine. When r's context asks for keep-alives (WithKeepAlive) and wait has not returned after
// that interval, it commits the stream and writes a comment, then one after each further interval
// until wait returns. It returns the committed stream, or nil when nothing was written and the
// status is still the caller's to choose. Nothing writes to w once it has returned.
func AwaitFirstToken(w http.ResponseWriter, r *http.Request, wait func()) *SSE {
	every, _ := r.Context().Value(keepAliveKey{}).(time.Duration)
	if every <= 0 {
		wait()
		return nil
	}
	var out *SSE
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if out == nil {
				out = StartSSE(w)
			}
			if _, err := w.Write(keepAliveComment); err != nil {
				return // the caller went away; wait ends with the request's context
			}
			out.flush()
			t.Reset(every)
		}
	})
	wait()
	close(done)
	wg.Wait()
	return out
}
