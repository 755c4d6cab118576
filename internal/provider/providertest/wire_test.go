package providertest_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/anthropic"
	"github.com/secureai-gateway/gateway/internal/provider/gemini"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
	pt "github.com/secureai-gateway/gateway/internal/provider/providertest"
)

const key = "test-secret-key"

// TestWiresThroughTheAdapters proves each wire format's faults read, through its real adapter, as
// the failure they stand for: the cross-provider tests rely on that.
func TestWiresThroughTheAdapters(t *testing.T) {
	adapters := map[string]func(provider.Config) (provider.Provider, error){"openai": openai.New, "anthropic": anthropic.New, "gemini": gemini.New}
	want := map[pt.Fault]chain.Reason{
		pt.RateLimited: chain.RateLimit, pt.RateLimitedRetryAfter: chain.RateLimit, pt.Unavailable: chain.ServerError,
		pt.Reset: chain.ConnectionError, pt.CutMidStream: chain.ConnectionError, pt.Malformed: chain.ServerError,
	}
	req := &provider.Request{Body: []byte(`{"model":"x","messages":[{"role":"user","content":"Hi"}]}`), Model: "m"}
	for _, w := range []pt.Wire{pt.OpenAI, pt.Anthropic, pt.Gemini} {
		for _, f := range []pt.Fault{pt.Serve, pt.SlowFirstEvent, pt.RateLimited, pt.RateLimitedRetryAfter, pt.Unavailable, pt.ContextTooLong, pt.Reset, pt.Hung, pt.CutMidStream, pt.Malformed, pt.MissingTerminator} {
			for _, stream := range []bool{false, true} {
				name := w.Name + "/" + string(f)
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					s := pt.New(t, w.Handler(f, `Hi "there"`))
					p, err := adapters[w.Name](provider.Config{Name: w.Name, BaseURL: s.URL, APIKey: key, Client: s.Client()})
					if err != nil {
						t.Fatal(err)
					}
					ctx := pt.WithTimeout(t, 500*time.Millisecond) // what Hung holds a call for
					var text string
					if stream {
						var st provider.Stream
						if st, err = p.Stream(ctx, req); err == nil {
							var cs []provider.Chunk
							cs, err = pt.Drain(t, st)
							for _, c := range cs {
								text += gjson.GetBytes(c.Data, "choices.0.delta.content").String()
							}
						}
					} else {
						var resp *provider.Response
						if resp, err = p.Complete(ctx, req); err == nil {
							text = gjson.GetBytes(resp.Body, "choices.0.message.content").String()
						}
					}
					switch f {
					case pt.Serve, pt.SlowFirstEvent:
						pt.WantEnd(t, ignoreEOF(err, stream), "", "", false, key)
						if text != `Hi "there"` {
							t.Errorf("content = %q", text)
						}
					case pt.Hung:
						if !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("err = %v, want the deadline", err)
						}
					case pt.ContextTooLong:
						pt.WantErr(t, err, "", 400, "context_length_exceeded", key)
					case pt.MissingTerminator:
						pt.WantErr(t, err, chain.ConnectionError, 0, "", key)
					default:
						// Only the reason is the wire's to get right; a code (OpenAI's
						// rate_limit_exceeded) is passed along as the provider sent it.
						var pe *provider.Error
						if !errors.As(err, &pe) || pe.Reason != want[f] {
							t.Errorf("err = %v, want reason %q", err, want[f])
						}
					}
				})
			}
		}
	}
}

// TestSendHookSeesTheWireBytes proves, through each HTTP adapter, that Request.OnSend sees
// exactly the bytes its provider receives and can add a header or refuse (see CheckSendHook).
func TestSendHookSeesTheWireBytes(t *testing.T) {
	adapters := map[string]func(provider.Config) (provider.Provider, error){"openai": openai.New, "anthropic": anthropic.New, "gemini": gemini.New}
	req := &provider.Request{Body: []byte(`{"model":"x","messages":[{"role":"user","content":"Hi \u00e9"}],"max_tokens":5}`), Model: "m"}
	for _, w := range []pt.Wire{pt.OpenAI, pt.Anthropic, pt.Gemini} {
		t.Run(w.Name, func(t *testing.T) {
			s := pt.New(t, w.Handler(pt.Serve, "Hi"))
			p, err := adapters[w.Name](provider.Config{Name: w.Name, BaseURL: s.URL, APIKey: key, Client: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			pt.CheckSendHook(t, p, s, req)
		})
	}
}

// ignoreEOF turns a plain call's success into the io.EOF WantEnd expects of a clean stream.
func ignoreEOF(err error, stream bool) error {
	if !stream && err == nil {
		return errEOF
	}
	return err
}

var errEOF = io.EOF
