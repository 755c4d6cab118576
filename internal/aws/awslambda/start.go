package awslambda

import (
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

// Start serves h as a buffered Lambda function; it never returns. For a
// function's main.go: awslambda.Start(handler).
func Start(h http.Handler) { lambda.Start(Buffered(h)) }

// StartStreaming serves h as a response-streaming Lambda function, or buffered
// under `sam local` (see SAMLocal); it never returns.
func StartStreaming(h http.Handler) {
	if SAMLocal() {
		lambda.Start(StreamingBuffered(h))
		return
	}
	lambda.Start(Streaming(h))
}

// SAMLocal reports whether the function runs under `sam local`, which sets
// AWS_SAM_LOCAL=true in the function's environment.
func SAMLocal() bool { return os.Getenv("AWS_SAM_LOCAL") == "true" }
