// Package awslambda runs a plain http.Handler as an AWS Lambda function behind an
// API Gateway REST API (proxy integration), so the same handler serves the local
// server and the cloud.
//
// Two modes, chosen per function:
//
//   - Buffered (Start): the whole response is built, then returned; API Gateway's
//     29 s integration limit applies.
//   - Streaming (StartStreaming): the response returns to API Gateway as soon as the
//     handler commits its status (WriteHeader, first Write or Flush) and every later
//     Write goes out at once. Needs the REST API method's ResponseTransferMode:
//     RESPONSE_STREAM. Under `sam local` (AWS_SAM_LOCAL=true), which cannot pass a
//     stream, the same handler answers with a buffered response instead.
//
// A handler that fails after its status has gone out aborts the response the
// net/http way, panic(http.ErrAbortHandler), after writing its error frame: the
// local server then drops the connection and the Lambda runtime reports the
// failure to the client, so neither path looks like a clean end of stream.
package awslambda
