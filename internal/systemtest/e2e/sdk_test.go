package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
	"github.com/tidwall/gjson"
)

// sdkClient is the official OpenAI Go SDK pointed at the gateway, as a user would configure it.
func sdkClient(e *env, secret string) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.url+"/v1"), option.WithAPIKey(secret), option.WithMaxRetries(0))
}

func sdkParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")}}
}

func TestOpenAISDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), clientBound)
	defer cancel()
	e := newEnv(t)
	c := sdkClient(e, e.secret)

	t.Run("plain-failover", func(t *testing.T) {
		resp, err := c.Chat.Completions.New(ctx, sdkParams("fake/error-500"),
			option.WithJSONSet("fallback_models", []string{"fake/error-429", "fake/ok"}),
			option.WithJSONSet("redundancy", map[string]any{"timeout_ms": 2000}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Model != "fake/ok" || resp.Choices[0].Message.Content != openaifake.Answer {
			t.Errorf("model %q content %q", resp.Model, resp.Choices[0].Message.Content)
		}
		sec := gjson.Get(resp.RawJSON(), "secureai")
		if _, ok := resp.JSON.ExtraFields["secureai"]; !ok {
			t.Error("secureai is not among the SDK's extra fields")
		}
		if sec.Get("served_model").String() != "fake/ok" || sec.Get("requested_model").String() != "fake/error-500" {
			t.Errorf("secureai %s", sec.Raw)
		}
		want := []attempt{failed("fake/error-500", "server_error"), failed("fake/error-429", "rate_limit"), served("fake/ok")}
		if got := attemptsOf(sec.Get("failover.attempts")); !sec.Get("failover.occurred").Bool() || !equalAttempts(got, want) {
			t.Errorf("failover %s, want attempts %+v", sec.Get("failover").Raw, want)
		}
	})

	t.Run("plain-models", func(t *testing.T) {
		resp, err := c.Chat.Completions.New(ctx, sdkParams("ignored-by-models"),
			option.WithJSONSet("models", []string{"down/refused", "fake/ok"}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Model != "fake/ok" || gjson.Get(resp.RawJSON(), "secureai.failover.attempts.0.reason").String() != "connection_error" {
			t.Errorf("model %q, secureai %s", resp.Model, gjson.Get(resp.RawJSON(), "secureai").Raw)
		}
	})

	t.Run("stream-failover", func(t *testing.T) {
		p := sdkParams("fake/slow-first-token")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := c.Chat.Completions.NewStreaming(ctx, p,
			option.WithJSONSet("fallback_models", []string{"fake/ok"}),
			option.WithJSONSet("redundancy", map[string]any{"timeout_ms": 1000, "first_token_timeout_ms": 500}))
		defer s.Close()
		var acc openai.ChatCompletionAccumulator
		var first string
		n := 0
		for s.Next() {
			ch := s.Current()
			if n == 0 {
				first = ch.RawJSON()
			}
			n++
			acc.AddChunk(ch)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != openaifake.Answer {
			t.Errorf("accumulated %q", got)
		}
		if acc.Model != "fake/ok" || acc.Usage.TotalTokens == 0 {
			t.Errorf("model %q usage %+v", acc.Model, acc.Usage)
		}
		if r := gjson.Get(first, "secureai.failover.attempts.0.reason").String(); r != "timeout" {
			t.Errorf("first chunk secureai %s", gjson.Get(first, "secureai").Raw)
		}
	})

	t.Run("stream-broken-after-token-is-an-error", func(t *testing.T) {
		s := c.Chat.Completions.NewStreaming(ctx, sdkParams("fake/cut"))
		defer s.Close()
		for s.Next() {
		}
		if s.Err() == nil {
			t.Error("a stream cut after its first token ended without an error in the SDK")
		}
	})

	for _, tc := range []struct {
		name   string
		model  string
		extra  []string
		status int
	}{
		{"exhausted-502", "fake/error-500", []string{"fake/reset"}, 502},
		{"exhausted-429", "fake/error-429", []string{"fake/error-429-retry-after"}, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					s := c.Chat.Completions.NewStreaming(ctx, sdkParams(tc.model), option.WithJSONSet("fallback_models", tc.extra))
					for s.Next() {
					}
					err = s.Err()
					s.Close()
				} else {
					_, err = c.Chat.Completions.New(ctx, sdkParams(tc.model), option.WithJSONSet("fallback_models", tc.extra))
				}
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) {
					t.Fatalf("stream=%v: want *openai.Error, got %T %v", stream, err, err)
				}
				if apiErr.StatusCode != tc.status || apiErr.Code != "all_models_failed" || !strings.HasPrefix(apiErr.Message, "All 2 model attempt(s) failed") {
					t.Errorf("stream=%v: status %d code %q message %q", stream, apiErr.StatusCode, apiErr.Code, apiErr.Message)
				}
				if n := len(gjson.Get(apiErr.RawJSON(), "attempts").Array()); n != 2 {
					t.Errorf("stream=%v: %d attempts in %s", stream, n, apiErr.RawJSON())
				}
			}
		})
	}

	t.Run("bad-key-401", func(t *testing.T) {
		bad := sdkClient(e, "sk-"+strings.Repeat("0", 64))
		_, err := bad.Chat.Completions.New(ctx, sdkParams("fake/ok"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
			t.Fatalf("want a 401 invalid_api_key *openai.Error, got %v", err)
		}
	})
}
