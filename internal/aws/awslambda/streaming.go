package awslambda

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// StreamingHandler is the Lambda handler signature for a streamed API Gateway
// REST proxy response.
type StreamingHandler func(context.Context, events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error)

// StreamError is how a handler failure after the status went out reaches the
// Lambda runtime; aws-lambda-go names the error after its type in the
// Lambda-Runtime-Function-Error-Type trailer, so the type name is part of the
// contract seen in logs.
type StreamError struct{ Err error }

func (e *StreamError) Error() string { return "awslambda: stream aborted: " + e.Err.Error() }
func (e *StreamError) Unwrap() error { return e.Err }

// Streaming adapts h to a streaming Lambda handler. The returned function comes
// back as soon as h commits its status; h keeps running in its own goroutine and
// its writes reach the runtime through the response Body. h's request context is
// the invocation context (so the Lambda deadline is h's deadline), canceled early
// if the body can no longer be delivered.
func Streaming(h http.Handler) StreamingHandler {
	var accessor core.RequestAccessor
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.APIGatewayProxyStreamingResponse, error) {
		// reqCtx ends with the handler; ctx (the invocation's) is what this
		// function waits on, so the handler finishing never looks like a timeout.
		reqCtx, cancel := context.WithCancel(ctx)
		req, err := accessor.EventToRequestWithContext(reqCtx, ev)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("awslambda: converting proxy event: %w", err)
		}
		pr, pw := io.Pipe()
		w := newStreamWriter(pw, cancel)
		failed := make(chan error, 1) // a panic before commit

		go func() {
			defer cancel()
			defer func() {
				p := recover()
				if p == nil {
					w.Flush() // a handler that wrote nothing still answers 200
					pw.Close()
					return
				}
				err := panicError(p)
				select {
				case <-w.committed:
					pw.CloseWithError(&StreamError{Err: err})
				default:
					pw.CloseWithError(err)
					failed <- err
				}
			}()
			h.ServeHTTP(w, req)
		}()

		select {
		case <-w.committed:
		case err := <-failed:
			return nil, err
		case <-ctx.Done():
			// Nobody will read the body now; unblock the handler's writes.
			pr.CloseWithError(ctx.Err())
			return nil, ctx.Err()
		}
		status, head := w.result()
		return &events.APIGatewayProxyStreamingResponse{
			StatusCode:        status,
			MultiValueHeaders: head,
			Body:              pr,
		}, nil
	}
}

// panicError turns a recovered panic into an error, logging the stack unless
// the handler aborted on purpose.
func panicError(p any) error {
	if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
		return err
	}
	slog.Error("awslambda: handler panic", "panic", p, "stack", string(debug.Stack()))
	if err, ok := p.(error); ok {
		return fmt.Errorf("handler panic: %w", err)
	}
	return fmt.Errorf("handler panic: %v", p)
}
