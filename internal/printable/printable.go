// Package printable says whether text an admin stores (a key's name, a webhook's description) reads
// as it is: valid UTF-8 with no control character (NUL and line breaks included) and no
// bidirectional formatting character (U+202E and the other overrides, embeddings, isolates and
// marks), which could make a listing, a log line or the console show other text than was stored.
package printable

import (
	"unicode"
	"unicode/utf8"
)

// Text reports whether s is printable text.
func Text(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}
