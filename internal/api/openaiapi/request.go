package openaiapi

import (
	"fmt"
	"strings"

	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/tidwall/gjson"
)

// numericFields are checked because the translators to other providers' formats rely on them;
// they follow the fields read first in read's one pass.
var numericFields = [...]struct {
	field   string
	lo, hi  float64
	integer bool
}{{"temperature", 0, 2, false}, {"top_p", 0, 1, false}, {"max_tokens", 1, 1 << 30, true}, {"max_completion_tokens", 1, 1 << 30, true}}

// Where read's one pass puts the numeric fields, then the chain fields, then the fields that
// ask for several answers.
const (
	firstNumeric = 5
	firstChain   = firstNumeric + len(numericFields)
	firstAnswers = firstChain + 4
)

// answerFields ask a provider for several answers to one request (best_of: generate several,
// return the best). The gateway prices, reserves and bills one answer per request, so any other
// count is refused rather than served at the price of one.
var answerFields = [...]string{"n", "best_of"}

// request is what the gateway itself needs of a chat request; everything else is the provider's
// to judge and passes through untouched.
type request struct {
	in        completion.Input
	wantUsage bool // the caller asked for the usage chunk
}

// Read validates body as a chat request of this surface and returns what it asks of the
// completion service.
func Read(body []byte) (completion.Input, error) {
	in, err := read(body)
	if err != nil {
		return completion.Input{}, err
	}
	return in.in, nil
}

// read validates the fields of body the gateway reads, in one pass before any provider is
// called, and keeps what the completion needs of them; the policy is completion.Open's to
// resolve, the chain's models its to check.
func read(body []byte) (*request, error) {
	var f [firstAnswers + len(answerFields) + 1]gjson.Result
	jsonview.Fields(f[:], jsonview.String(body), "messages", "stream", "stream_options.include_usage", "smltp_policy", "user_id",
		"temperature", "top_p", "max_tokens", "max_completion_tokens",
		"model", "models", "fallback_models", "redundancy",
		"n", "best_of", "fallbacks")
	if p := checkMessages(f[0]); p != nil {
		return nil, p
	}
	for i, r := range numericFields {
		if p := checkNumber(f[firstNumeric+i], r.field, r.lo, r.hi, r.integer); p != nil {
			return nil, p
		}
	}
	for i, field := range answerFields {
		if v := f[firstAnswers+i]; v.Exists() && v.Type != gjson.Null && (v.Type != gjson.Number || v.Num != 1) {
			return nil, fault.Invalid(field, field+" must be 1 (or absent): the gateway answers, prices and reserves one choice per request; send the request again for another answer")
		}
	}
	in := &request{in: completion.Input{Surface: Surface, Body: body, Stream: f[1].Type == gjson.True,
		MaxTokens: int(max(f[firstNumeric+2].Int(), f[firstNumeric+3].Int()))}, wantUsage: f[2].Bool()}
	if s := f[1]; s.Exists() && s.Type != gjson.True && s.Type != gjson.False && s.Type != gjson.Null {
		return nil, fault.Invalid("stream", "stream must be a boolean")
	}
	for i, field := range [...]string{3: "smltp_policy", 4: "user_id"} {
		if v := f[i]; field != "" && v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			return nil, fault.Invalid(field, field+" must be a string")
		}
	}
	in.in.Policy, in.in.UserID = strings.Clone(f[3].Str), strings.Clone(f[4].Str) // kept past the body's view
	var err error
	if in.in.Chain, err = chain.SpecOf(f[firstChain], f[firstChain+1], f[firstChain+2], f[firstChain+3]); err != nil {
		return nil, err
	}
	if err = in.in.Chain.LiteLLMFallbacks(f[firstAnswers+len(answerFields)]); err != nil {
		return nil, err
	}
	return in, nil
}

// checkNumber checks an optional numeric sampling or length field the gateway's translators rely on.
func checkNumber(v gjson.Result, field string, lo, hi float64, integer bool) error {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if v.Type != gjson.Number || (integer && v.Num != float64(int64(v.Num))) || v.Num < lo || v.Num > hi {
		kind := "a number"
		if integer {
			kind = "an integer"
		}
		return fault.Invalid(field, fmt.Sprintf("%s must be %s between %g and %g", field, kind, lo, hi))
	}
	return nil
}
