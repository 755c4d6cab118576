package providertest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/provider"
)

// Checks every adapter must pass the same way, whatever its wire format.

// CheckCancelPromptly calls p, plain and streamed, against an upstream that never answers and
// wants the context's own error as soon as the context ends.
func CheckCancelPromptly(t *testing.T, p provider.Provider, req *provider.Request) {
	t.Helper()
	for _, stream := range []bool{false, true} {
		ctx := WithTimeout(t, 100*time.Millisecond)
		start := time.Now()
		var err error
		if stream {
			_, err = p.Stream(ctx, req)
		} else {
			_, err = p.Complete(ctx, req)
		}
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Errorf("stream=%v: err = %v after %v, want the context's error at once", stream, err, time.Since(start))
		}
	}
}

// CheckCloseUnblocksRecv reads n chunks of s, whose upstream then goes silent, and wants Close to
// end a Recv blocked on it with an interruption, and to be safe to call again.
func CheckCloseUnblocksRecv(t *testing.T, s provider.Stream, n int) {
	t.Helper()
	for range n {
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := s.Recv(); done <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || err == io.EOF {
			t.Errorf("Recv after Close = %v, want an interruption", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Recv still blocked after Close")
	}
	_ = s.Close() // idempotent
}

// CheckCancelledMidStream opens a stream with open, whose upstream goes silent part way, cancels
// its context, and wants context.Canceled as is from Recv.
func CheckCancelledMidStream(t *testing.T, open func(ctx context.Context) (provider.Stream, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	time.AfterFunc(50*time.Millisecond, cancel)
	for {
		if _, err = s.Recv(); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled as is", err)
	}
}

// Summary renders chunks compactly: R role, T text, C tool call start (name, then any arguments
// it carries), A tool args, F finish, U usage.
func Summary(cs []provider.Chunk) string {
	var s []string
	for _, c := range cs {
		d := gjson.ParseBytes(c.Data).Get("choices.0.delta")
		switch {
		case c.UsageOnly:
			s = append(s, "U")
		case c.Finish:
			s = append(s, "F:"+gjson.GetBytes(c.Data, "choices.0.finish_reason").String())
		case d.Get("role").Exists():
			s = append(s, "R")
		case d.Get("tool_calls.0.id").Exists():
			s = append(s, "C:"+d.Get("tool_calls.0.function.name").String()+d.Get("tool_calls.0.function.arguments").String())
		case d.Get("tool_calls").Exists():
			s = append(s, "A:"+d.Get("tool_calls.0.function.arguments").String())
		default:
			s = append(s, "T:"+d.Get("content").String())
		}
	}
	return strings.Join(s, " ")
}
