package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// Sign returns the signature headers for body sent as delivery id at ts, signed with each of
// secrets (the current one first; a rotated-out one while its overlap lasts):
//
//	X-SecureAI-Signature: t=<unix>,v1=<hex HMAC-SHA256 keyed by the whsec_… string's bytes, of "<t>.<body>">[,v1=…]
//	webhook-signature:    v1,<base64 HMAC-SHA256 keyed by base64-decode(part after whsec_), of "<id>.<t>.<body>">[ v1,…]
//
// plus webhook-id and webhook-timestamp. A receiver accepts a delivery when any v1 matches.
func Sign(secrets []string, id string, ts time.Time, body []byte) (http.Header, error) {
	t := strconv.FormatInt(ts.Unix(), 10)
	own := "t=" + t
	var std []string
	for _, secret := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
		if err != nil || !strings.HasPrefix(secret, secretPrefix) {
			if err == nil {
				err = fmt.Errorf("no %s prefix", secretPrefix)
			}
			return nil, &ErrSecret{Err: err}
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(t + "."))
		mac.Write(body)
		own += ",v1=" + hex.EncodeToString(mac.Sum(nil))

		mac = hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + t + "."))
		mac.Write(body)
		std = append(std, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	if len(std) == 0 {
		return nil, &ErrSecret{Err: errors.New("no signing secret")}
	}
	h := http.Header{}
	h.Set(HeaderSignature, own)
	h[HeaderWebhookID] = []string{id}
	h[HeaderWebhookTimestamp] = []string{t}
	h[HeaderWebhookSignature] = []string{strings.Join(std, " ")}
	return h, nil
}
