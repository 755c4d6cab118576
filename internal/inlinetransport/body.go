package inlinetransport

import (
	"context"
	"io"
	"sync/atomic"
)

// body is a response's body on its connection: read to its end it gives the connection back to
// the pool; closed before that, or failed, it closes the connection (as net/http does: draining
// an unread rest could take as long as the rest takes to arrive).
type body struct {
	rc   io.ReadCloser
	c    *conn
	ctx  context.Context
	stop func() bool // unregisters the cancellation; false when it has fired
	keep bool        // the response and request allow reuse
	done atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.release(true)
	case err != nil:
		b.release(false)
		err = ctxErr(b.ctx, err)
	}
	return n, err
}

// Close may run while a Read waits: closing the connection ends that Read.
func (b *body) Close() error {
	b.release(false)
	return nil
}

func (b *body) release(atEnd bool) {
	if b.done.CompareAndSwap(false, true) {
		b.c.end(b.stop, atEnd && b.keep)
	}
}
