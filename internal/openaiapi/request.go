package openaiapi

import (
	"fmt"
	"github.com/secureai-gateway/gateway/internal/apierr"
	"github.com/secureai-gateway/gateway/internal/apikey"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/policy"
	"github.com/tidwall/gjson"
)

// numericFields are checked because the translators to other providers' formats rely on them;
// they follow the fields read first in read's GetManyBytes.
var numericFields = [...]struct {
	field   string
	lo, hi  float64
	integer bool
}{{"temperature", 0, 2, false}, {"top_p", 0, 1, false}, {"max_tokens", 1, 1 << 30, true}, {"max_completion_tokens", 1, 1 << 30, true}}

const firstNumeric = 5

// request is what the gateway itself needs of a chat request; everything else is the provider's
// to judge and passes through untouched.
type request struct {
	body      []byte
	plan      chain.Plan
	policy    policy.Applied
	stream    bool
	wantUsage bool // the caller asked for the usage chunk
}

// read validates body for key and resolves its chain and policy, before any provider is called.
func (h *Handler) read(key *apikey.Key, body []byte) (*request, error) {
	f := gjson.GetManyBytes(body, "messages", "stream", "stream_options.include_usage", "smltp_policy", "user_id",
		"temperature", "top_p", "max_tokens", "max_completion_tokens")
	if p := checkMessages(f[0]); p != nil {
		return nil, p
	}
	for i, r := range numericFields {
		if p := checkNumber(f[firstNumeric+i], r.field, r.lo, r.hi, r.integer); p != nil {
			return nil, p
		}
	}
	in := &request{body: body, stream: f[1].Type == gjson.True, wantUsage: f[2].Bool()}
	if s := f[1]; s.Exists() && s.Type != gjson.True && s.Type != gjson.False && s.Type != gjson.Null {
		return nil, apierr.BadRequest("stream", "stream must be a boolean")
	}
	for i, field := range [...]string{3: "smltp_policy", 4: "user_id"} {
		if v := f[i]; field != "" && v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			return nil, apierr.BadRequest(field, field+" must be a string")
		}
	}
	if !key.MayActFor(f[4].Str) {
		return nil, apierr.OnBehalfDenied()
	}
	var err error
	if in.policy, err = policy.Resolve(f[3].Str); err != nil {
		return nil, apierr.BadRequest("smltp_policy", err.Error())
	}
	spec, err := chain.ParseSpec(body)
	if err != nil {
		return nil, err
	}
	if in.plan, err = h.Completions.Prepare(key, spec); err != nil {
		return nil, err
	}
	return in, nil
}

// checkMessages wants a non-empty array of objects, each with a string role, without building a
// slice of them.
func checkMessages(m gjson.Result) *apierr.Problem {
	if !m.IsArray() {
		return apierr.BadRequest("messages", "messages is required: a non-empty array of chat messages")
	}
	var p *apierr.Problem
	n := 0
	m.ForEach(func(_, msg gjson.Result) bool {
		if !msg.IsObject() || msg.Get("role").Type != gjson.String {
			p = apierr.BadRequest(fmt.Sprintf("messages[%d]", n), fmt.Sprintf("messages[%d] must be an object with a string role", n))
			return false
		}
		n++
		return true
	})
	if p == nil && n == 0 {
		p = apierr.BadRequest("messages", "messages is required: a non-empty array of chat messages")
	}
	return p
}

// checkNumber checks an optional numeric sampling or length field the gateway's translators rely on.
func checkNumber(v gjson.Result, field string, lo, hi float64, integer bool) *apierr.Problem {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if v.Type != gjson.Number || (integer && v.Num != float64(int64(v.Num))) || v.Num < lo || v.Num > hi {
		kind := "a number"
		if integer {
			kind = "an integer"
		}
		return apierr.BadRequest(field, fmt.Sprintf("%s must be %s between %g and %g", field, kind, lo, hi))
	}
	return nil
}
