package translate

import "github.com/tidwall/gjson"

// Text collects the text blocks of a non-streamed answer into OpenAI's single content string. One
// block's JSON token is used as is; several are decoded, joined and encoded again.
type Text struct {
	first  []byte // the first block's JSON string token
	joined []byte // every block's decoded text
	n      int
}

// Add appends one text block, a JSON string.
func (t *Text) Add(s gjson.Result) {
	if t.n++; t.n == 1 {
		t.first = []byte(s.Raw)
	}
	t.joined = append(t.joined, s.Str...)
}

// Token returns the content as a JSON string token, or nil when there was no text block.
func (t *Text) Token() []byte {
	if t.n > 1 {
		return AppendString(nil, string(t.joined))
	}
	return t.first
}
