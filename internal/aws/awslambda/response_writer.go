package awslambda

import (
	"fmt"
	"io"
	"net/http"
	"sync"
)

// streamWriter is the http.ResponseWriter of a streaming invocation. Status and
// headers are committed once, on the first WriteHeader, Write or Flush, because
// that is when the Lambda handler must return them to the runtime; the body then
// flows through a pipe the runtime reads while the handler writes.
type streamWriter struct {
	header http.Header
	pipe   *io.PipeWriter
	// abort cancels the handler's request context when the reader side is gone
	// (client disconnected or runtime failed), so upstream calls stop too.
	abort func()

	mu        sync.Mutex
	status    int
	committed chan struct{} // closed on commit
	// head is the header snapshot taken at commit; later Header() edits are
	// ignored, as with net/http once the header is written.
	head http.Header
}

func newStreamWriter(pipe *io.PipeWriter, abort func()) *streamWriter {
	return &streamWriter{
		header:    make(http.Header),
		pipe:      pipe,
		abort:     abort,
		committed: make(chan struct{}),
	}
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(code int) {
	// Same contract as net/http: an invalid code is a programming error.
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("awslambda: invalid WriteHeader code %v", code))
	}
	// API Gateway has no way to pass informational responses through.
	if code < 200 {
		return
	}
	w.commit(code, nil)
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.commit(http.StatusOK, p)
	if len(p) == 0 {
		return 0, nil // a pipe write would wait for a reader even with nothing to send
	}
	n, err := w.pipe.Write(p)
	if err != nil {
		w.abort()
	}
	return n, err
}

// Flush commits the status; the body needs no flushing since a pipe write
// returns only once the runtime has read it.
func (w *streamWriter) Flush() { w.commit(http.StatusOK, nil) }

// commit fixes status and headers once. first is the first body chunk, used as
// net/http does to sniff a missing Content-Type.
func (w *streamWriter) commit(code int, first []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status != 0 {
		return
	}
	if first != nil && w.header.Get("Content-Type") == "" {
		w.header.Set("Content-Type", http.DetectContentType(first))
	}
	w.status = code
	w.head = w.header.Clone()
	close(w.committed)
}

// result returns the committed status and headers; valid after committed is closed.
func (w *streamWriter) result() (int, http.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.head
}
