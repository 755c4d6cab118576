package chain

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/tidwall/gjson"
)

// The opt-in behaviours beyond the seed (SPEC 3.5a). Each is off unless a request or a key's
// failoverDefaults switches it on, so the seed's rules stay the default.

// Limits of the retry option.
const (
	MaxRetries       = 2
	MaxRetryWaitMS   = 10000
	DefaultRetryWait = 2 * time.Second // max_wait_ms when a retry names none
)

// RetryOptions is `retry: {attempts, max_wait_ms}` as sent (0 = unset).
type RetryOptions struct {
	Attempts  int `json:"attempts"`
	MaxWaitMS int `json:"max_wait_ms,omitempty"`
}

// Retry is how a plan retries a model before failing over.
type Retry struct {
	Attempts int
	MaxWait  time.Duration
}

// retryable are the reasons worth asking the same model again: a silent provider (timeout) is not
// asked twice, and a context-length refusal would only be refused again.
func retryable(r Reason) bool { return r == ServerError || r == ConnectionError || r == RateLimit }

// wait returns how long to wait before retry n+1 (n retries made so far) after a failure for
// reason, and whether to retry at all: after the provider's Retry-After when it is within
// MaxWait (else fail over at once), otherwise after a jittered exponential backoff; never when
// the wait would not leave time for the attempt before the deadline (left).
func (r Retry) wait(n int, reason Reason, retryAfter, left time.Duration) (time.Duration, bool) {
	if n >= r.Attempts || !retryable(reason) {
		return 0, false
	}
	var d time.Duration
	if retryAfter > 0 {
		if retryAfter > r.MaxWait {
			return 0, false
		}
		d = retryAfter
	} else {
		// 250 ms, 500 ms, … with full jitter on the upper half, so a burst of callers does not
		// come back in step, and never less than 100 ms (no tight loop).
		base := 250 * time.Millisecond << n
		d = min(max(base/2+rand.N(base/2+1), 100*time.Millisecond), r.MaxWait)
	}
	if d >= left {
		return 0, false
	}
	return d, true
}

// Interrupt says what a stream that breaks after its first content token does.
type Interrupt string

const (
	// InterruptError ends the stream with an error frame (the seed's rule, the default).
	InterruptError Interrupt = "error"
	// InterruptResume continues the answer on the next model able to continue an assistant
	// prefix.
	InterruptResume Interrupt = "resume"
)

func parseRetry(field string, v gjson.Result) (*RetryOptions, error) {
	if !v.IsObject() {
		return nil, &InputError{Field: field, Message: "must be an object {attempts, max_wait_ms}"}
	}
	var o RetryOptions
	err := forEachField(v, field, func(k, val gjson.Result) (err error) {
		if val.Type == gjson.Null && (k.Str == "attempts" || k.Str == "max_wait_ms") {
			return nil // unset
		}
		switch k.Str {
		case "attempts":
			o.Attempts, err = parseInt(field+".attempts", val, 0, MaxRetries)
		case "max_wait_ms":
			o.MaxWaitMS, err = parseInt(field+".max_wait_ms", val, 0, MaxRetryWaitMS)
		default:
			err = &InputError{Field: field + "." + k.Str, Message: "unknown field (allowed: attempts, max_wait_ms)"}
		}
		return err
	})
	return &o, err
}

func parseInterrupt(field string, v gjson.Result) (Interrupt, error) {
	switch {
	case v.Type == gjson.String && v.Str == string(InterruptError):
		return InterruptError, nil
	case v.Type == gjson.String && v.Str == string(InterruptResume):
		return InterruptResume, nil
	}
	return "", &InputError{Field: field, Message: `must be "error" or "resume"`}
}

func parseBool(field string, v gjson.Result) (*bool, error) {
	if v.Type != gjson.True && v.Type != gjson.False {
		return nil, &InputError{Field: field, Message: "must be true or false"}
	}
	b := v.Type == gjson.True
	return &b, nil
}

func parseInt(field string, v gjson.Result, lo, hi int) (int, error) {
	if v.Type != gjson.Number || v.Num != float64(int64(v.Num)) || v.Num < float64(lo) || v.Num > float64(hi) {
		return 0, &InputError{Field: field, Message: fmt.Sprintf("must be an integer between %d and %d (got %s)", lo, hi, fault.Clip(v.Raw, 32))}
	}
	return int(v.Num), nil
}

// normalizeRetry clamps an admin's retry defaults into range.
func normalizeRetry(r *RetryOptions) *RetryOptions {
	if r == nil {
		return nil
	}
	return &RetryOptions{Attempts: clamp(r.Attempts, 0, MaxRetries), MaxWaitMS: clamp(r.MaxWaitMS, 0, MaxRetryWaitMS)}
}

func (o *RetryOptions) resolve() Retry {
	r := Retry{Attempts: o.Attempts, MaxWait: DefaultRetryWait}
	if o.MaxWaitMS > 0 {
		r.MaxWait = time.Duration(o.MaxWaitMS) * time.Millisecond
	}
	return r
}
