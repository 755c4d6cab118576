package tracing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signingService is the service X-Ray's OTLP endpoint verifies signatures for.
const signingService = "xray"

// sigV4Transport signs each OTLP export with AWS Signature Version 4, as X-Ray's OTLP endpoint
// requires. It signs every attempt afresh, so a retried export carries a current signature, and
// the credentials come from a provider that refreshes the function role's session.
type sigV4Transport struct {
	base   http.RoundTripper
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
}

func (t *sigV4Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	creds, err := t.creds.Retrieve(r.Context())
	if err != nil {
		return nil, err
	}
	// A RoundTripper must not change the request it is given: sign a copy, with the body the
	// signature's hash covers.
	signed := r.Clone(r.Context())
	signed.Body = io.NopCloser(bytes.NewReader(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	signed.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	if err := t.signer.SignHTTP(r.Context(), creds, signed, hex.EncodeToString(sum[:]), signingService, t.region, time.Now()); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(signed)
}
