package gemini

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/secureai-gateway/gateway/internal/provider/providertest"
)

// TestFixturesParseWithTheOfficialSDK proves the fake speaks Gemini's real wire format: the
// official Go SDK, pointed at it, decodes every fixture into the answer it describes.
func TestFixturesParseWithTheOfficialSDK(t *testing.T) {
	ctx := context.Background()
	client := func(t *testing.T, f *providertest.Server) *genai.Client {
		c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: testKey, Backend: genai.BackendGeminiAPI, HTTPClient: f.Client(),
			HTTPOptions: genai.HTTPOptions{BaseURL: f.URL + "/"}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("response_tool.json", func(t *testing.T) {
		r, err := client(t, providertest.New(t, providertest.ServeFixture(t, 200, "response_tool.json"))).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Hi"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if calls := r.FunctionCalls(); len(calls) != 2 || calls[1].Args["city"] != "Berlin" || r.UsageMetadata.ThoughtsTokenCount != 60 {
			t.Errorf("decoded %+v", r)
		}
	})
	for _, name := range []string{"stream_text.sse", "stream_tool.sse"} {
		t.Run(name, func(t *testing.T) {
			var text string
			var finish genai.FinishReason
			for r, err := range client(t, providertest.New(t, providertest.ServeSSE(events(t, name), 0, nil))).Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("Hi"), nil) {
				if err != nil {
					t.Fatal(err)
				}
				text += r.Text()
				finish = r.Candidates[0].FinishReason
			}
			if finish != genai.FinishReasonStop || (name == "stream_text.sse" && text != "The sky is blue because of \"Rayleigh\"\nscattering.") {
				t.Errorf("text %q finish %q", text, finish)
			}
		})
	}
	t.Run("error_rate_limit.json", func(t *testing.T) {
		_, err := client(t, providertest.New(t, providertest.ServeFixture(t, 429, "error_rate_limit.json"))).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Hi"), nil)
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != 429 || apiErr.Status != "RESOURCE_EXHAUSTED" {
			t.Errorf("err = %v", err)
		}
	})
}
