package providertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
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

// SendHookHeader is the field CheckSendHook's hook adds to the upstream request.
const SendHookHeader = "X-Gateway-Send-Hook"

// refusal is the error CheckSendHook's refusing hook returns. It carries a failover reason, which
// the refusal must not turn into a failover.
type refusal struct{}

func (refusal) Error() string                { return "refused by the send hook" }
func (refusal) FailoverReason() chain.Reason { return chain.ServerError }

// CheckSendHook calls p, plain and streamed, with a Request.OnSend hook, against s, which answers
// both with success. A hook that accepts is called once per upstream request, with exactly the
// bytes s received, and the header it returns reaches s. A hook that refuses aborts the call with
// nothing sent, and its error comes back final, as a *provider.SendHookError wrapping its own.
func CheckSendHook(t *testing.T, p provider.Provider, s *Server, req *provider.Request) {
	t.Helper()
	call := func(stream bool, hook provider.SendHook) error {
		r := *req
		r.OnSend = hook
		if !stream {
			_, err := p.Complete(WithTimeout(t, 5*time.Second), &r)
			return err
		}
		st, err := p.Stream(WithTimeout(t, 5*time.Second), &r)
		if err != nil {
			return err
		}
		if _, err = Drain(t, st); err != io.EOF {
			return err
		}
		return nil
	}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v/sent bytes are the hook's", stream), func(t *testing.T) {
			var seen [][]byte
			before := s.Calls()
			err := call(stream, func(ctx context.Context, body []byte) (http.Header, error) {
				seen = append(seen, bytes.Clone(body))
				return http.Header{SendHookHeader: {"attempt-1"}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			body, header, _ := s.Received()
			if calls := s.Calls() - before; len(seen) != 1 || calls != 1 {
				t.Fatalf("hook called %d times for %d upstream requests, want 1 and 1", len(seen), calls)
			}
			if len(body) == 0 || !bytes.Equal(seen[0], body) {
				t.Errorf("hook saw\n%s\nupstream received\n%s", seen[0], body)
			}
			if got := header.Get(SendHookHeader); got != "attempt-1" {
				t.Errorf("upstream %s = %q, want the hook's attempt-1", SendHookHeader, got)
			}
		})
		t.Run(fmt.Sprintf("stream=%v/a refusal sends nothing and is final", stream), func(t *testing.T) {
			before := s.Calls()
			err := call(stream, func(context.Context, []byte) (http.Header, error) { return nil, refusal{} })
			if calls := s.Calls() - before; calls != 0 {
				t.Errorf("upstream received %d requests, want none", calls)
			}
			var refused *provider.SendHookError
			var own refusal
			if !errors.As(err, &refused) || !errors.As(err, &own) {
				t.Fatalf("err = %v (%T), want a *provider.SendHookError wrapping the hook's error", err, err)
			}
			if r := chain.ReasonOf(err); r != "" {
				t.Errorf("reason = %q, want a final error", r)
			}
		})
	}
}
