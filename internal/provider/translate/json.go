package translate

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// Arguments returns a provider's tool-call input object as the compact JSON string OpenAI's
// arguments field holds; anything but an object becomes "{}", since OpenAI clients parse it.
func Arguments(input gjson.Result) []byte {
	var buf bytes.Buffer
	if input.IsObject() && json.Compact(&buf, []byte(input.Raw)) == nil {
		return AppendString(nil, buf.String())
	}
	return []byte(`"{}"`)
}

// Sep appends the comma that separates the next element from the previous one in an open JSON
// array: none right after the '['.
func Sep(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '[' {
		return append(b, ',')
	}
	return b
}
