package bedrock

import (
	"crypto/rand"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// translateResponse turns a Converse output into a chat.completion.
func translateResponse(out *bedrockruntime.ConverseOutput, model string, created int64) (*provider.Response, error) {
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return nil, &provider.Error{Reason: chain.ServerError, Type: "server_error", Message: "provider bedrock answered without a message"}
	}
	var (
		text  []byte
		calls []translate.ToolCall
	)
	for _, block := range msg.Value.Content {
		switch b := block.(type) {
		case *types.ContentBlockMemberText:
			text = append(text, b.Value...)
		case *types.ContentBlockMemberToolUse:
			args := []byte("{}")
			if b.Value.Input != nil {
				if raw, err := b.Value.Input.MarshalSmithyDocument(); err == nil {
					args = raw
				}
			}
			calls = append(calls, translate.ToolCall{ID: aws.ToString(b.Value.ToolUseId), Name: aws.ToString(b.Value.Name), Args: translate.AppendString(nil, string(args))})
		}
	}
	var token []byte
	if text != nil {
		token = translate.AppendString(nil, string(text))
	}
	u := usage(out.Usage)
	body := translate.AppendCompletion(nil, "chatcmpl-"+rand.Text(), model, created, token, calls, finishReason(out.StopReason), u)
	return &provider.Response{Body: body, Usage: u}, nil
}

// usage counts cached prompt tokens as prompt tokens, as OpenAI's prompt_tokens does.
func usage(u *types.TokenUsage) provider.Usage {
	if u == nil {
		return provider.Usage{}
	}
	return provider.Usage{
		PromptTokens:     int(aws.ToInt32(u.InputTokens) + aws.ToInt32(u.CacheReadInputTokens) + aws.ToInt32(u.CacheWriteInputTokens)),
		CompletionTokens: int(aws.ToInt32(u.OutputTokens)),
	}
}

func finishReason(r types.StopReason) string {
	switch r {
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return "length"
	case types.StopReasonToolUse:
		return "tool_calls"
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return "content_filter"
	}
	return "stop"
}
