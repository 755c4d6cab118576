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
// A stream the handler interrupts (a provider that fails after the first token,
// the request's deadline reached) ends with its surface's error frame and then
// ends normally, as on the local server: the frame, with no [DONE] after it, is
// what tells the client. Only a handler that panics after its status has gone out
// (panic(http.ErrAbortHandler) included) aborts the stream: the body is closed
// with a *StreamError, which the runtime reports in the
// Lambda-Runtime-Function-Error-Type trailer; a panic before the status is an
// invocation error.
//
// The handler's request context is the invocation's, so its deadline is the
// invocation's; a caller that must answer before the runtime kills the function
// (internal/aws/cloud) gives its handler an earlier one.
package awslambda
