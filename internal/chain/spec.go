package chain

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/tidwall/gjson"
)

// Entry is one model of a requested chain, with optional per-attempt timeouts (0 = unset).
type Entry struct {
	Model               string
	TimeoutMS           int
	FirstTokenTimeoutMS int
}

// Options are chain-wide settings; zero values and nil mean "not set".
type Options struct {
	TimeoutMS           int
	FirstTokenTimeoutMS int
	On                  []Reason
	Retry               *RetryOptions
	OnInterrupt         Interrupt
	SkipUnhealthy       *bool
	HedgeAfterMS        int
}

// Spec is what a request says about its chain, before resolution.
type Spec struct {
	Model      string
	Models     []Entry // the `models` field; nil when absent
	Fallbacks  []Entry // the `fallback_models` field; nil when absent
	Redundancy Options
}

// Ranges from the contract; request values outside them are rejected, admin defaults are clamped.
const (
	MinTimeoutMS           = 1000
	MaxTimeoutMS           = 300000
	MinFirstTokenTimeoutMS = 500
	MaxFirstTokenTimeoutMS = 60000
	MaxModels              = 3
	MinHedgeAfterMS        = 100
	MaxHedgeAfterMS        = 60000
)

// MaxModelName bounds the length of a model name a request may send, in bytes. A name becomes a
// metric label, report lines, events, receipts and audit entries, and a provider with any_model
// admits any name, so the bound is the request's and the same for every provider: 200 bytes hold
// every provider's ids, Bedrock's inference-profile ARNs included.
const MaxModelName = 200

// ValidModelName reports whether name may name a model: 1 to MaxModelName bytes of ASCII
// letters, digits and / . _ - : @ + — the characters of the catalog's names and of providers' own
// ids (Bedrock's "us.anthropic.claude-3-5-sonnet-20241022-v2:0", OpenRouter's
// "anthropic/claude-3.5-sonnet:beta", Ollama's "llama3.2:latest"). A space, a control character
// or a bidirectional override (U+202E), which would make a log line or a console page lie about
// the name, never is.
func ValidModelName(name string) bool {
	if name == "" || len(name) > MaxModelName {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("/._-:@+", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// badModelName is the InputError of a name ValidModelName refuses; the name itself is not quoted
// back, as it may be a megabyte long or hold characters a terminal would act on.
func badModelName(field string) *InputError {
	return &InputError{Field: field, Message: fmt.Sprintf("must be a model name of at most %d bytes of ASCII letters, digits and / . _ - : @ +", MaxModelName)}
}

// ParseSpec reads the chain fields (model, models, fallback_models, redundancy) of a request body.
// Every violation is an *InputError naming the field. The API surfaces read these fields in their
// own one pass and call SpecOf; this is for a body read for its chain alone (tests, tools).
func ParseSpec(body []byte) (Spec, error) {
	var f [4]gjson.Result
	jsonview.Fields(f[:], jsonview.String(body), "model", "models", "fallback_models", "redundancy")
	return SpecOf(f[0], f[1], f[2], f[3])
}

// SpecOf builds the Spec of a request whose chain fields its surface has already read, in its
// own one pass over the body: the members model, models, fallback_models and redundancy (absent
// or null: not set). It judges them by the same rules as ParseSpec, with the same errors.
func SpecOf(model, models, fallbacks, redundancy gjson.Result) (Spec, error) {
	var s Spec
	if m := model; m.Exists() && m.Type != gjson.Null {
		if m.Type != gjson.String {
			return s, &InputError{Field: "model", Message: "must be a string"}
		}
		if m.Str != "" && !ValidModelName(m.Str) { // "" is no model: Resolve says one is needed
			return s, badModelName("model")
		}
		s.Model = strings.Clone(m.Str) // model names outlive the body (health, events)
	}
	var err error
	if s.Models, err = parseEntries("models", models); err != nil {
		return s, err
	}
	if s.Fallbacks, err = parseEntries("fallback_models", fallbacks); err != nil {
		return s, err
	}
	if s.Models != nil && s.Fallbacks != nil {
		return s, &InputError{Field: "fallback_models", Message: "cannot be combined with models; send one chain"}
	}
	if r := redundancy; r.Exists() && r.Type != gjson.Null {
		if s.Redundancy, err = parseOptions(r); err != nil {
			return s, err
		}
	}
	return s, nil
}

func parseEntries(field string, v gjson.Result) ([]Entry, error) {
	if !v.Exists() || v.Type == gjson.Null {
		return nil, nil
	}
	if !v.IsArray() {
		return nil, &InputError{Field: field, Message: "must be an array of model names or {model, timeout_ms, first_token_timeout_ms} objects"}
	}
	items := v.Array()
	if len(items) == 0 {
		if field == "fallback_models" {
			return nil, nil // no fallbacks, as if absent: generic clients send empty arrays
		}
		return nil, &InputError{Field: field, Message: "must not be empty"}
	}
	out := make([]Entry, 0, len(items))
	for i, it := range items {
		name := fmt.Sprintf("%s[%d]", field, i)
		e, err := parseEntry(name, it)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func parseEntry(field string, v gjson.Result) (Entry, error) {
	switch {
	case v.Type == gjson.String:
		if v.Str == "" {
			return Entry{}, &InputError{Field: field, Message: "model name must not be empty"}
		}
		if !ValidModelName(v.Str) {
			return Entry{}, badModelName(field)
		}
		return Entry{Model: strings.Clone(v.Str)}, nil
	case v.IsObject():
		var e Entry
		err := forEachField(v, field, func(k, val gjson.Result) (err error) {
			switch k.Str {
			case "model":
				switch {
				case val.Type != gjson.String || val.Str == "":
					err = &InputError{Field: field + ".model", Message: "must be a non-empty string"}
				case !ValidModelName(val.Str):
					err = badModelName(field + ".model")
				default:
					e.Model = strings.Clone(val.Str)
				}
			case "timeout_ms", "first_token_timeout_ms":
				if val.Type == gjson.Null {
					return nil // unset, as a null chain field is
				}
				if k.Str == "timeout_ms" {
					e.TimeoutMS, err = parseMS(field+".timeout_ms", val, MinTimeoutMS, MaxTimeoutMS)
				} else {
					e.FirstTokenTimeoutMS, err = parseMS(field+".first_token_timeout_ms", val, MinFirstTokenTimeoutMS, MaxFirstTokenTimeoutMS)
				}
			default:
				err = &InputError{Field: field + "." + k.Str, Message: "unknown field (allowed: model, timeout_ms, first_token_timeout_ms)"}
			}
			return err
		})
		if err == nil && e.Model == "" {
			err = &InputError{Field: field + ".model", Message: "is required"}
		}
		return e, err
	}
	return Entry{}, &InputError{Field: field, Message: "must be a model name or a {model, timeout_ms, first_token_timeout_ms} object"}
}

// optionNames are the members of redundancy.
var optionNames = []string{"timeout_ms", "first_token_timeout_ms", "on", "retry", "on_interrupt", "skip_unhealthy", "hedge_after_ms"}

func parseOptions(v gjson.Result) (Options, error) {
	if !v.IsObject() {
		return Options{}, &InputError{Field: "redundancy", Message: "must be an object {timeout_ms, first_token_timeout_ms, on, retry, on_interrupt, skip_unhealthy, hedge_after_ms}"}
	}
	var o Options
	err := forEachField(v, "redundancy", func(k, val gjson.Result) (err error) {
		if val.Type == gjson.Null && slices.Contains(optionNames, k.Str) {
			return nil // unset, as a null chain field (or redundancy itself) is: SDKs send None so
		}
		switch k.Str {
		case "timeout_ms":
			o.TimeoutMS, err = parseMS("redundancy.timeout_ms", val, MinTimeoutMS, MaxTimeoutMS)
		case "first_token_timeout_ms":
			o.FirstTokenTimeoutMS, err = parseMS("redundancy.first_token_timeout_ms", val, MinFirstTokenTimeoutMS, MaxFirstTokenTimeoutMS)
		case "on":
			o.On, err = parseOn(val)
		case "retry":
			o.Retry, err = parseRetry("redundancy.retry", val)
		case "on_interrupt":
			o.OnInterrupt, err = parseInterrupt("redundancy.on_interrupt", val)
		case "skip_unhealthy":
			o.SkipUnhealthy, err = parseBool("redundancy.skip_unhealthy", val)
		case "hedge_after_ms":
			o.HedgeAfterMS, err = parseMS("redundancy.hedge_after_ms", val, MinHedgeAfterMS, MaxHedgeAfterMS)
		default:
			err = &InputError{Field: "redundancy." + k.Str, Message: "unknown field (allowed: timeout_ms, first_token_timeout_ms, on, retry, on_interrupt, skip_unhealthy, hedge_after_ms)"}
		}
		return err
	})
	return o, err
}

// forEachField calls fn for each member of object v until one fails. A member that appears twice
// is refused: parsers disagree on which copy wins, so the gateway could judge one value while a
// provider used the other.
func forEachField(v gjson.Result, field string, fn func(k, val gjson.Result) error) error {
	var names [8]string
	seen := names[:0]
	var err error
	v.ForEach(func(k, val gjson.Result) bool {
		if slices.Contains(seen, k.Str) {
			err = &InputError{Field: field + "." + k.Str, Message: "appears more than once"}
			return false
		}
		seen = append(seen, k.Str)
		err = fn(k, val)
		return err == nil
	})
	return err
}

func parseOn(v gjson.Result) ([]Reason, error) {
	if !v.IsArray() {
		return nil, &InputError{Field: "redundancy.on", Message: "must be an array of failover triggers"}
	}
	names := make([]string, 0, 4)
	for _, it := range v.Array() {
		if it.Type != gjson.String {
			return nil, &InputError{Field: "redundancy.on", Message: "entries must be strings"}
		}
		names = append(names, it.Str)
	}
	t, err := ParseTriggers("redundancy.on", names)
	if err != nil {
		return nil, err
	}
	return t.List(), nil
}

func parseMS(field string, v gjson.Result, lo, hi int) (int, error) {
	if v.Type != gjson.Number || v.Num != math.Trunc(v.Num) {
		return 0, &InputError{Field: field, Message: "must be an integer number of milliseconds"}
	}
	// Compare as a float first: a huge value must not overflow int into the range.
	if v.Num < float64(lo) || v.Num > float64(hi) {
		return 0, &InputError{Field: field, Message: fmt.Sprintf("must be between %d and %d (got %s)", lo, hi, v.Raw)}
	}
	return int(v.Num), nil
}

// LiteLLMFallbacks honours LiteLLM's fallbacks member, which clients written for LiteLLM send: a
// list of model names is this gateway's fallback_models; anything else, or beside models or
// fallback_models, is refused naming it — never passed on to a provider as if it were the
// provider's.
func (s *Spec) LiteLLMFallbacks(v gjson.Result) error {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	if s.Models != nil || s.Fallbacks != nil {
		return &InputError{Field: "fallbacks", Message: "is LiteLLM's name for fallback_models; send one of them, not both or beside models"}
	}
	ok := v.IsArray()
	v.ForEach(func(_, m gjson.Result) bool {
		ok = m.Type == gjson.String
		return ok
	})
	if !ok {
		return &InputError{Field: "fallbacks", Message: "must be a list of model names (LiteLLM's fallbacks; this gateway's field is fallback_models)"}
	}
	fallbacks, err := parseEntries("fallbacks", v)
	if err != nil {
		return err
	}
	s.Fallbacks = fallbacks
	return nil
}

// Header names of the chain for clients that can set headers but not body members (Claude Code's
// ANTHROPIC_CUSTOM_HEADERS, Codex's http_headers): comma-separated model names.
const (
	HeaderModels         = "X-SecureAI-Models"
	HeaderFallbackModels = "X-SecureAI-Fallback-Models"
)

// FromHeaders sets the chain from the values of HeaderModels and HeaderFallbackModels when the
// body named none: a body member is the more explicit, and wins. The names are judged as the
// body's are, errors naming the header.
func (s *Spec) FromHeaders(models, fallbacks string) error {
	if s.Models != nil || s.Fallbacks != nil || (models == "" && fallbacks == "") {
		return nil
	}
	if models != "" && fallbacks != "" {
		return &InputError{Field: HeaderFallbackModels, Message: "cannot be combined with " + HeaderModels + "; send one chain"}
	}
	field, list := HeaderModels, models
	if fallbacks != "" {
		field, list = HeaderFallbackModels, fallbacks
	}
	names := strings.Split(list, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	raw, _ := json.Marshal(names) // strings always marshal
	entries, err := parseEntries(field, gjson.ParseBytes(raw))
	if err != nil {
		return err
	}
	if field == HeaderModels {
		s.Models = entries
	} else {
		s.Fallbacks = entries
	}
	return nil
}
