// Package awsclient holds what every AWS SDK client of the gateway needs beyond the SDK's
// defaults.
package awsclient

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Guard makes every client built from cfg safe from smithy-go cutting a connection under its
// response (see GuardBody).
func Guard(cfg *aws.Config) {
	c := cfg.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	cfg.HTTPClient = GuardBody(c)
}

// GuardBody keeps smithy-go's request body from cutting the connection under the response.
//
// smithy-go's ClientHandler closes the request body as soon as Do returns, which net/http
// allows: the transport's write loop may still be using it. After writing ContentLength bytes
// that loop reads the body once more to check it is exhausted, and if Do has returned by then
// (the server answered as soon as it had the bytes) it reads the closed body through its WriteTo,
// which smithy-go's safe closer answers with io.EOF as an error rather than the (0, nil)
// io.WriterTo means at the end. The transport takes that for a failed request write and closes
// the connection while the response (a Bedrock event stream, a DynamoDB item) is still being
// read from it: "use of closed network connection". Hiding WriteTo sends that last check through
// Read, whose io.EOF after Close is the clean end it means.
func GuardBody(c aws.HTTPClient) aws.HTTPClient { return guard{c} }

type guard struct{ aws.HTTPClient }

func (g guard) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = readCloser{r.Body}
	}
	return g.HTTPClient.Do(r)
}

// readCloser exposes Read and Close only.
type readCloser struct{ io.ReadCloser }
