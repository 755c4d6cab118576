package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	HeaderEvent     = "X-SecureAI-Event"
	HeaderDelivery  = "X-SecureAI-Delivery"
	HeaderSignature = "X-SecureAI-Signature"
	// Standard Webhooks (standardwebhooks.com), so its verifiers work unchanged.
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

const secretPrefix = "whsec_"

// ErrSecret is a signing secret that is not "whsec_" and base64.
type ErrSecret struct{ Err error }

func (e *ErrSecret) Error() string {
	return "webhook: signing secret is not whsec_ followed by base64: " + e.Err.Error()
}
func (e *ErrSecret) Unwrap() error { return e.Err }

// Sign returns the signature headers for body sent as delivery id at ts:
//
//	X-SecureAI-Signature: t=<unix>,v1=<hex HMAC-SHA256 keyed by the whsec_… string's bytes, of "<t>.<body>">
//	webhook-signature:    v1,<base64 HMAC-SHA256 keyed by base64-decode(part after whsec_), of "<id>.<t>.<body>">
//
// plus webhook-id and webhook-timestamp.
func Sign(secret, id string, ts time.Time, body []byte) (http.Header, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || !strings.HasPrefix(secret, secretPrefix) {
		if err == nil {
			err = fmt.Errorf("no %s prefix", secretPrefix)
		}
		return nil, &ErrSecret{Err: err}
	}
	t := strconv.FormatInt(ts.Unix(), 10)

	own := hmac.New(sha256.New, []byte(secret))
	own.Write([]byte(t + "."))
	own.Write(body)

	std := hmac.New(sha256.New, key)
	std.Write([]byte(id + "." + t + "."))
	std.Write(body)

	h := http.Header{}
	h.Set(HeaderSignature, "t="+t+",v1="+hex.EncodeToString(own.Sum(nil)))
	h[HeaderWebhookID] = []string{id}
	h[HeaderWebhookTimestamp] = []string{t}
	h[HeaderWebhookSignature] = []string{"v1," + base64.StdEncoding.EncodeToString(std.Sum(nil))}
	return h, nil
}
