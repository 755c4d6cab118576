package bedrock

import (
	"context"
	"crypto/rand"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider"
	"github.com/secureai-gateway/gateway/internal/provider/translate"
)

// stream translates ConverseStream's events (messageStart, contentBlockStart/Delta/Stop,
// messageStop, metadata), which the SDK decodes from the binary event stream as they arrive.
type stream struct {
	ctx    context.Context
	events *bedrockruntime.ConverseStreamEventStream
	a      *adapter
	model  string
	chunks translate.Chunks

	tools    map[int32]int // content block index → OpenAI tool call index
	queue    translate.Queue
	finished bool // messageStop arrived: only the metadata event is still awaited
}

func (a *adapter) newStream(ctx context.Context, events *bedrockruntime.ConverseStreamEventStream, model string, created int64) *stream {
	return &stream{ctx: ctx, events: events, a: a, model: model, chunks: translate.NewChunks("chatcmpl-"+rand.Text(), model, created), tools: map[int32]int{}}
}

func (s *stream) Recv() (provider.Chunk, error) {
	for {
		if c, ok := s.queue.Pop(); ok {
			return c, nil
		}
		if s.queue.Ended() {
			return provider.Chunk{}, io.EOF
		}
		select {
		case ev, ok := <-s.events.Events():
			if !ok {
				return provider.Chunk{}, s.endError()
			}
			s.handle(ev)
		case <-s.ctx.Done():
			return provider.Chunk{}, s.ctx.Err()
		}
	}
}

// handle queues the chunks one event produces.
func (s *stream) handle(ev types.ConverseStreamOutput) {
	switch e := ev.(type) {
	case *types.ConverseStreamOutputMemberMessageStart:
		s.queue.Push(s.chunks.Role())
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			i := len(s.tools)
			s.tools[aws.ToInt32(e.Value.ContentBlockIndex)] = i
			s.queue.Push(s.chunks.ToolCall(i, aws.ToString(tu.Value.ToolUseId), aws.ToString(tu.Value.Name), []byte(`""`)))
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := e.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if d.Value != "" {
				s.queue.Push(s.chunks.Text(translate.AppendString(nil, d.Value)))
			}
		case *types.ContentBlockDeltaMemberToolUse:
			i, ok := s.tools[aws.ToInt32(e.Value.ContentBlockIndex)]
			if in := aws.ToString(d.Value.Input); ok && in != "" {
				s.queue.Push(s.chunks.ToolArgs(i, translate.AppendString(nil, in)))
			}
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		s.queue.Push(s.chunks.Finish(finishReason(e.Value.StopReason)))
		s.finished = true
	case *types.ConverseStreamOutputMemberMetadata:
		if e.Value.Usage != nil {
			s.queue.Push(s.chunks.Usage(usage(e.Value.Usage)))
		}
		s.queue.End()
	}
}

// endError explains why the events ran out before the metadata event: an exception the stream
// carried, the caller leaving, or a cut connection. A stream whose messageStop arrived is
// complete even if its metadata never does.
func (s *stream) endError() error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	if err := s.events.Err(); err != nil {
		return s.a.classify(err, s.model)
	}
	if s.finished {
		return io.EOF
	}
	return &provider.Error{Reason: chain.ConnectionError, Message: "provider bedrock ended the stream before messageStop", Err: io.ErrUnexpectedEOF}
}

// Close stops the event stream and its HTTP body; a Recv waiting on it returns at once. The
// stream's read error, if any, was Recv's to report, so Close reports none.
func (s *stream) Close() error {
	_ = s.events.Close()
	return nil
}
