package awslambda

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// BufferedHandler is the Lambda handler signature for a buffered API Gateway
// REST proxy response.
type BufferedHandler func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// Buffered adapts h to a buffered Lambda handler (aws-lambda-go-api-proxy's
// httpadapter): for endpoints that never stream.
func Buffered(h http.Handler) BufferedHandler {
	return httpadapter.New(h).ProxyWithContext
}

// StreamingBuffered runs h through the streaming adapter and collects the whole
// stream into one buffered response. It exists for `sam local start-api`, which
// parses the function output as JSON and cannot pass a stream; going through
// Streaming keeps status, headers and body identical to the cloud path.
func StreamingBuffered(h http.Handler) BufferedHandler {
	stream := Streaming(h)
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		resp, err := stream(ctx, ev)
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
		out := events.APIGatewayProxyResponse{
			StatusCode:        resp.StatusCode,
			MultiValueHeaders: resp.MultiValueHeaders,
			Body:              string(body),
		}
		if !utf8.Valid(body) {
			out.Body = base64.StdEncoding.EncodeToString(body)
			out.IsBase64Encoded = true
		}
		return out, nil
	}
}
