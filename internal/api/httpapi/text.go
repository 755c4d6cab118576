package httpapi

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/jsonview"
	"github.com/tidwall/gjson"
)

// checkText refuses a body whose text is not valid Unicode: raw bytes that are not UTF-8, or an
// escaped UTF-16 surrogate without its pair. Decoders disagree on such text (replace, drop or
// refuse), so the gateway could count and judge one string while a provider received another.
// The common body passes with one scan; only a suspect one is walked to name the field.
func checkText(body []byte) error {
	if utf8.Valid(body) && !hasSurrogateEscape(body) {
		return nil
	}
	if path, ok := badText(gjson.Parse(jsonview.String(body)), ""); !ok {
		if path == "" {
			path = "body"
		}
		return fault.Invalid(path, path+": text must be valid UTF-8 without unpaired surrogates")
	}
	return nil
}

// hasSurrogateEscape reports whether body holds a \uD800–\uDFFF escape (paired or not).
func hasSurrogateEscape(body []byte) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i < len(body) && (body[i] == 'd' || body[i] == 'D') && i+1 < len(body) {
			if c := body[i+1] | 0x20; c >= '8' && c <= '9' || c >= 'a' && c <= 'f' {
				return true
			}
		}
	}
}

// badText walks v and returns the path of the first key or string that is not valid text.
func badText(v gjson.Result, path string) (string, bool) {
	switch {
	case v.Type == gjson.String:
		return path, validString(v.Raw)
	case v.IsObject() || v.IsArray():
		bad, ok := "", true
		i := 0
		v.ForEach(func(k, val gjson.Result) bool {
			p := path
			if v.IsArray() {
				p += "[" + strconv.Itoa(i) + "]"
			} else {
				if p != "" {
					p += "."
				}
				if !validString(k.Raw) {
					bad, ok = p+"<key>", false
					return false
				}
				p += k.Str
			}
			i++
			bad, ok = badText(val, p)
			return ok
		})
		return bad, ok
	}
	return path, true
}

// validString checks a raw JSON string literal: UTF-8 bytes, and surrogate escapes in pairs.
func validString(raw string) bool {
	if !utf8.ValidString(raw) {
		return false
	}
	for i := 0; i+5 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // skip the escaped character, which may itself be a backslash
			continue
		}
		r := hex4(raw[i+2 : i+6])
		i += 5
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 || i+7 > len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
			return false // a low surrogate first, or a high one with no escape after it
		}
		if lo := hex4(raw[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
			return false
		}
		i += 6
	}
	return true
}

func hex4(s string) rune {
	n, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return utf8.RuneError
	}
	return rune(n)
}
