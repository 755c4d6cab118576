package bedrock

import (
	"context"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// A Messages request to a Claude model on Bedrock goes as Bedrock's Anthropic body through
// InvokeModel: the caller's members untouched, the model in the URL, the version Bedrock names
// and the caller's betas in the body. Its answer and events are Anthropic's own.

// bedrockVersion is the anthropic_version Bedrock's Anthropic models take.
const bedrockVersion = "bedrock-2023-05-31"

// native reports whether req is a Messages request for a Claude model, which Bedrock serves in
// Anthropic's own format.
func native(req *provider.Request) bool {
	return req.NativeIn(provider.WireMessages) && strings.Contains(req.Model, "anthropic.")
}

// invokeBody is the Messages request as Bedrock's InvokeModel takes it.
func invokeBody(n *provider.Native) []byte {
	b := append(make([]byte, 0, len(n.Body)+96), `{"anthropic_version":"`+bedrockVersion+`"`...)
	b = n.AppendMembers(b)
	if n.Beta != "" {
		b = append(b, `,"anthropic_beta":[`...)
		for i, beta := range strings.Split(n.Beta, ",") {
			if i > 0 {
				b = append(b, ',')
			}
			b = translate.AppendString(b, strings.TrimSpace(beta))
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (a *adapter) invoke(ctx context.Context, c *bedrockruntime.Client, req *provider.Request) (*provider.Response, error) {
	out, err := c.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(req.Model), Body: invokeBody(req.Native),
		ContentType: aws.String("application/json"), Accept: aws.String("application/json")}, withSendHook(req.OnSend)...)
	if err != nil {
		return nil, a.classify(err, req.Model)
	}
	if !gjson.ValidBytes(out.Body) {
		return nil, &provider.Error{Reason: chain.ServerError, Message: "bedrock returned a malformed message"}
	}
	u := gjson.GetBytes(out.Body, "usage")
	return &provider.Response{Body: out.Body, Native: true, Usage: provider.Usage{
		PromptTokens:     int(u.Get("input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int()),
		CompletionTokens: int(u.Get("output_tokens").Int())}}, nil
}

func (a *adapter) invokeStream(ctx context.Context, c *bedrockruntime.Client, req *provider.Request) (provider.Stream, error) {
	out, err := c.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(req.Model),
		Body: invokeBody(req.Native), ContentType: aws.String("application/json"), Accept: aws.String("application/json")}, withSendHook(req.OnSend)...)
	if err != nil {
		return nil, a.classify(err, req.Model)
	}
	return &nativeStream{ctx: ctx, a: a, model: req.Model, events: out.GetStream()}, nil
}

// nativeStream gives out the Anthropic events each chunk of Bedrock's response stream carries,
// marking the first content, the usage and the end as the chain needs them.
type nativeStream struct {
	ctx    context.Context
	a      *adapter
	model  string
	events *bedrockruntime.InvokeModelWithResponseStreamEventStream
	usage  provider.Usage
	done   bool
	sent   bool // content went out: an error after it ends the stream, it never fails over
}

func (s *nativeStream) Recv() (provider.Chunk, error) {
	if s.done {
		return provider.Chunk{}, io.EOF
	}
	select {
	case ev, ok := <-s.events.Events():
		if !ok {
			if err := s.events.Err(); err != nil {
				return provider.Chunk{}, s.a.classify(err, s.model)
			}
			return provider.Chunk{}, &provider.Error{Reason: chain.ConnectionError, Message: "bedrock's stream ended before message_stop"}
		}
		chunk, ok := ev.(*types.ResponseStreamMemberChunk)
		if !ok || !gjson.ValidBytes(chunk.Value.Bytes) {
			return provider.Chunk{}, &provider.Error{Reason: chain.ServerError, Message: "bedrock sent a malformed stream event"}
		}
		return s.chunk(chunk.Value.Bytes)
	case <-s.ctx.Done():
		return provider.Chunk{}, s.ctx.Err()
	}
}

func (s *nativeStream) chunk(data []byte) (provider.Chunk, error) {
	ev := gjson.ParseBytes(data)
	c := provider.Chunk{Data: data, Native: true}
	switch ev.Get("type").String() {
	case "message_start":
		u := ev.Get("message.usage")
		s.usage.PromptTokens = int(u.Get("input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int())
	case "content_block_start":
		c.Content = ev.Get("content_block.type").String() == "tool_use"
	case "content_block_delta":
		d := ev.Get("delta")
		c.Content = d.Get("text").Str != "" || d.Get("partial_json").Str != "" || d.Get("thinking").Str != ""
	case "message_delta":
		s.usage.CompletionTokens = int(ev.Get("usage.output_tokens").Int())
		u := s.usage
		c.Usage, c.Finish = &u, true
	case "message_stop":
		s.done = true
	case "error":
		e := &provider.Error{Reason: chain.ServerError, Message: ev.Get("error.message").String()}
		if s.sent {
			e.Reason = ""
		}
		return provider.Chunk{}, e
	}
	s.sent = s.sent || c.Content
	return c, nil
}

func (s *nativeStream) Close() error { return s.events.Close() }
