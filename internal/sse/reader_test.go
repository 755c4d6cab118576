package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	type ev struct{ name, data string }
	cases := []struct {
		name  string
		input string
		want  []ev
		err   error // after the events
	}{
		{"single", "data: hello\n\n", []ev{{"", "hello"}}, io.EOF},
		{"no-space-after-colon", "data:hello\n\n", []ev{{"", "hello"}}, io.EOF},
		{"only-first-space-stripped", "data:  two\n\n", []ev{{"", " two"}}, io.EOF},
		{"multi-line-data", "data: a\ndata: b\ndata:\n\n", []ev{{"", "a\nb\n"}}, io.EOF},
		{"comments-and-keepalives", ": keep-alive\n\n: x\ndata: 1\n: mid\ndata: 2\n\n", []ev{{"", "1\n2"}}, io.EOF},
		{"crlf", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []ev{{"", "a\nb"}, {"", "c"}}, io.EOF},
		{"named-event", "event: error\ndata: {\"x\":1}\n\n", []ev{{"error", `{"x":1}`}}, io.EOF},
		{"unknown-fields-ignored", "id: 7\nretry: 10\ndata: x\n\n", []ev{{"", "x"}}, io.EOF},
		{"several-events", "data: 1\n\ndata: 2\n\n\n\ndata: [DONE]\n\n", []ev{{"", "1"}, {"", "2"}, {"", "[DONE]"}}, io.EOF},
		{"eof-mid-event", "data: 1\n\ndata: partial", []ev{{"", "1"}}, io.ErrUnexpectedEOF},
		{"eof-mid-event-after-newline", "data: partial\n", nil, io.ErrUnexpectedEOF},
		{"eof-after-comment-only", ": ping\n", nil, io.EOF},
		{"empty", "", nil, io.EOF},
	}
	for _, tc := range cases {
		for _, oneByte := range []bool{false, true} {
			name := tc.name
			var src io.Reader = strings.NewReader(tc.input)
			if oneByte {
				name += "/one-byte-reads"
				src = iotest.OneByteReader(src)
			}
			t.Run(name, func(t *testing.T) {
				r := NewReader(src)
				for i, w := range tc.want {
					e, err := r.Next()
					if err != nil {
						t.Fatalf("event %d: %v", i, err)
					}
					if string(e.Name) != w.name || string(e.Data) != w.data {
						t.Errorf("event %d = (%q, %q), want (%q, %q)", i, e.Name, e.Data, w.name, w.data)
					}
				}
				if _, err := r.Next(); !errors.Is(err, tc.err) {
					t.Errorf("after the events: %v, want %v", err, tc.err)
				}
			})
		}
	}
}

func TestReaderOversized(t *testing.T) {
	t.Run("one-long-line", func(t *testing.T) {
		r := NewReader(strings.NewReader("data: " + strings.Repeat("x", MaxEventSize+10) + "\n\n"))
		if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("got %v, want ErrEventTooLarge", err)
		}
	})
	t.Run("many-lines", func(t *testing.T) {
		line := "data: " + strings.Repeat("y", 64<<10) + "\n"
		r := NewReader(strings.NewReader(strings.Repeat(line, MaxEventSize/(64<<10)+2) + "\n"))
		if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("got %v, want ErrEventTooLarge", err)
		}
	})
	t.Run("just-under-the-limit", func(t *testing.T) {
		data := strings.Repeat("z", MaxEventSize-100)
		r := NewReader(strings.NewReader("data: " + data + "\n\n"))
		e, err := r.Next()
		if err != nil || len(e.Data) != len(data) {
			t.Fatalf("got %d bytes, %v", len(e.Data), err)
		}
	})
}
