package openai

import (
	"io"
	"strings"
	"testing"
)

// blockingBody serves what has arrived, then blocks like a live connection waiting for more.
type blockingBody struct {
	arrived io.Reader
	more    chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if n, err := b.arrived.Read(p); err != io.EOF {
		return n, err
	}
	<-b.more
	return 0, io.EOF
}

func (b *blockingBody) Close() error { return nil }

// Buffered lets the gateway hold a flush for the next chunk, so it must say yes only when the
// next Recv will not wait: bytes of a keep-alive or of a half-arrived event are not a chunk.
func TestBufferedOnlyWhenAWholeChunkHasArrived(t *testing.T) {
	const c = `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}` + "\n\n"
	for _, tc := range []struct {
		name, after string
		want        bool
	}{
		{"next chunk whole", c, true},
		{"next chunk whole, CRLF", strings.ReplaceAll(c, "\n", "\r\n"), true},
		{"nothing more", "", false},
		{"a keep-alive comment", ": keep-alive\n\n", false},
		{"half of the next chunk", `data: {"choices":[{"index":0,"delta":`, false},
		{"the next chunk's line without its blank line", `data: {"choices":[]}` + "\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &blockingBody{arrived: strings.NewReader(c + tc.after), more: make(chan struct{})}
			defer close(body.more)
			s := newStream(body)
			if _, err := s.Recv(); err != nil {
				t.Fatal(err)
			}
			if got := s.Buffered(); got != tc.want {
				t.Errorf("Buffered() = %v, want %v", got, tc.want)
			}
		})
	}
}
