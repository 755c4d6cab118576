package printable

import "testing"

func TestText(t *testing.T) {
	for s, want := range map[string]bool{
		"ops webhook": true, "déjà vu — 東京": true, "": true,
		"invoice\u202egpj.exe": false, "a\u2066b\u2069": false, "a\u200fb": false, "a\u061cb": false,
		"a\x00b": false, "a\nb": false, "a\x7fb": false, "a\u0085b": false, "\xff": false,
	} {
		if got := Text(s); got != want {
			t.Errorf("Text(%q) = %v, want %v", s, got, want)
		}
	}
}
