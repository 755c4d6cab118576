package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"github.com/google/uuid"
	"github.com/secureai-gateway/gateway/internal/event"
)

// deliveryNamespace makes delivery ids name-based: the same (event, endpoint) always gets the same
// id, so a fan-out that runs twice (a redelivered queue message) does not mint a second delivery.
var deliveryNamespace = uuid.MustParse("6f1d8a52-3c0e-4b7a-9d55-2a4c1e0b7f39")

// DeliveryID returns the delivery id of ev to endpointID: a UUID, the same on every retry.
func DeliveryID(eventID, endpointID string) string {
	return uuid.NewSHA1(deliveryNamespace, []byte(eventID+"\x00"+endpointID)).String()
}

// Delivery is one event going to one endpoint; it is the message that waits in a queue between
// attempts.
type Delivery struct {
	ID         string      `json:"deliveryId"`
	EndpointID string      `json:"endpointId"`
	Attempt    int         `json:"attempt"` // 1-based number of the attempt this message is for
	Event      event.Event `json:"event"`
}

// Attempt is the record of one delivery attempt, kept per endpoint for admins.
type Attempt struct {
	EndpointID string     `json:"endpointId"`
	DeliveryID string     `json:"deliveryId"`
	EventID    string     `json:"eventId"`
	EventType  event.Type `json:"eventType"`
	Attempt    int        `json:"attempt"`
	Status     string     `json:"status"`               // StatusSucceeded or StatusFailed
	StatusCode int        `json:"statusCode,omitempty"` // the receiver's answer; 0 when there was none
	LatencyMs  int64      `json:"latencyMs"`
	Error      string     `json:"error,omitempty"`
	At         time.Time  `json:"at"`
	// NextAttemptAt is when the delivery's next attempt is due, on a failed attempt that is
	// retried (zero when it is not: a success, the last attempt, a 410, a test event).
	NextAttemptAt time.Time `json:"nextAttemptAt,omitzero"`
}

// Attempt statuses.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
)

// Succeeded reports whether the receiver acknowledged.
func (a Attempt) Succeeded() bool { return a.Status == StatusSucceeded }

// Poster makes one delivery attempt.
type Poster struct {
	Client  *http.Client // from Guard.Client
	Now     func() time.Time
	Timeout time.Duration // per attempt; 0 means AttemptTimeout
}

// Post sends d to ep once. Any 2xx acknowledges; everything else (another status, a refused
// address, a timeout) is a failed attempt described in the result.
func (p *Poster) Post(ctx context.Context, ep *Endpoint, d Delivery) Attempt {
	start := p.Now()
	a := Attempt{EndpointID: ep.ID, DeliveryID: d.ID, EventID: d.Event.ID, EventType: d.Event.Type,
		Attempt: d.Attempt, Status: StatusFailed, At: start.UTC()}
	code, err := p.post(ctx, ep, d, start)
	a.LatencyMs = p.Now().Sub(start).Milliseconds()
	a.StatusCode = code
	switch {
	case err != nil:
		a.Error = describeFailure(err)
	case code >= 200 && code < 300:
		a.Status = StatusSucceeded
	default:
		a.Error = fmt.Sprintf("receiver answered %d", code)
	}
	return a
}

func (p *Poster) post(ctx context.Context, ep *Endpoint, d Delivery, now time.Time) (int, error) {
	body, err := json.Marshal(d.Event)
	if err != nil {
		return 0, fmt.Errorf("encoding the event: %w", err)
	}
	sig, err := Sign(ep.SigningSecrets(now), d.ID, now, body)
	if err != nil {
		return 0, err
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = AttemptTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return 0, &ErrURL{URL: ep.URL, Reason: "not a valid request URL", Err: err}
	}
	req.Header = sig
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "SecureAI-Gateway-Webhooks/1")
	req.Header.Set(HeaderEvent, string(d.Event.Type))
	req.Header.Set(HeaderDelivery, d.ID)
	resp, err := p.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused; the body itself is not needed.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// describeFailure says why an attempt failed in words an admin can act on, without the resolved
// address (it would map the deployment's network) or the URL's path and query (often a secret).
func describeFailure(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var op *net.OpError
	switch {
	case errors.Is(err, ssrf.ErrProhibitedIP), errors.Is(err, ssrf.ErrProhibitedNetwork), errors.Is(err, ssrf.ErrProhibitedPort):
		return "the host resolves to a private, loopback or link-local address"
	case errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err):
		return "no answer within the attempt's timeout"
	case errors.As(err, &dns):
		return "the host does not resolve"
	case errors.As(err, &cert):
		return "the receiver's TLS certificate is not valid"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the receiver refused the connection"
	case errors.As(err, &op) && op.Op == "dial":
		return "the receiver could not be reached"
	}
	return "the request failed before the receiver answered"
}
