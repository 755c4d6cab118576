package anthropic

import (
	"context"
	"errors"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// TestFixturesParseWithTheOfficialSDK proves the fake speaks Anthropic's real wire format: the
// official Go SDK, pointed at it, decodes every fixture into the message it describes.
func TestFixturesParseWithTheOfficialSDK(t *testing.T) {
	params := sdk.MessageNewParams{
		Model:     "claude-sonnet-4-20250514",
		MaxTokens: 64,
		Messages:  []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock("Hi"))},
	}
	client := func(f *providertest.Server) *sdk.Client {
		c := sdk.NewClient(option.WithBaseURL(f.URL), option.WithAPIKey(testKey), option.WithMaxRetries(0))
		return &c
	}

	t.Run("message_tool.json", func(t *testing.T) {
		msg, err := client(providertest.New(t, providertest.ServeFixture(t, 200, "message_tool.json"))).Messages.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != sdk.StopReasonToolUse || len(msg.Content) != 2 || msg.Content[1].Name != "get_weather" || msg.Usage.CacheReadInputTokens != 100 {
			t.Errorf("decoded %+v", msg)
		}
	})
	for _, name := range []string{"stream_text.sse", "stream_tool.sse"} {
		t.Run(name, func(t *testing.T) {
			st := client(providertest.New(t, providertest.ServeSSE(events(t, name), 0, nil))).Messages.NewStreaming(context.Background(), params)
			var msg sdk.Message
			for st.Next() {
				if err := msg.Accumulate(st.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			if msg.ID == "" || msg.StopReason == "" || msg.Usage.OutputTokens == 0 || len(msg.Content) == 0 {
				t.Errorf("accumulated %+v", msg)
			}
			if last := msg.Content[len(msg.Content)-1]; last.Type == "tool_use" && string(last.Input) != `{"location": "San Francisco, CA"}` {
				t.Errorf("tool input %s", last.Input)
			}
		})
	}
	t.Run("error_overloaded.json", func(t *testing.T) {
		_, err := client(providertest.New(t, providertest.ServeFixture(t, 529, "error_overloaded.json"))).Messages.New(context.Background(), params)
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 {
			t.Errorf("err = %v", err)
		}
	})
}
