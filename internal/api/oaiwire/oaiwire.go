// Package oaiwire edits OpenAI-shaped JSON objects on their way to the caller without decoding
// them: the provider's bytes are copied to the writer with the model replaced and the gateway's
// own object appended.
package oaiwire

import (
	"bytes"
	"io"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"
)

// WriteObject writes obj with its "model" set to model and, when extra is not empty, the raw JSON
// extra added under key. obj must be a JSON object (the provider adapters guarantee it).
//
// It runs once per streamed chunk, so it allocates nothing when w is an io.StringWriter (an
// http.ResponseWriter is) and model needs no escaping.
func WriteObject(w io.Writer, obj []byte, model string, key string, extra []byte) error {
	return Find(obj).Write(w, model, key, extra)
}

// Object is a JSON object with its "model" member located, so that it can be measured (Len) and
// written (Write) without being searched twice. It refers to obj, which must outlive it.
type Object struct {
	obj        []byte
	end        int // the closing brace; -1 when obj is no object
	model, raw int // the model value's offset and length; model 0 when there is none
}

// Find locates obj's closing brace and its top-level "model" value.
func Find(obj []byte) Object {
	o := Object{obj: obj, end: bytes.LastIndexByte(obj, '}')}
	if o.end >= 0 {
		// The result aliases obj and is dropped here, so obj need not be copied to a string
		// (gjson.GetBytes would copy the value out).
		m := gjson.Get(unsafe.String(unsafe.SliceData(obj), len(obj)), "model")
		if m.Exists() {
			o.model, o.raw = m.Index, len(m.Raw)
		}
	}
	return o
}

// Write writes the object as WriteObject does.
func (o Object) Write(w io.Writer, model string, key string, extra []byte) error {
	obj, end := o.obj, o.end
	if end < 0 {
		_, err := w.Write(obj)
		return err
	}
	ww := writer{w: w}
	if o.model > 0 {
		ww.write(obj[:o.model])
		ww.quoted(model)
		ww.write(obj[o.model+o.raw : end])
	} else {
		ww.write(obj[:end])
		if needsComma(obj[:end]) {
			ww.str(`,`)
		}
		ww.str(`"model":`)
		ww.quoted(model)
	}
	if len(extra) > 0 {
		ww.str(`,"`)
		ww.str(key)
		ww.str(`":`)
		ww.write(extra)
	}
	ww.write(obj[end:])
	return ww.err
}

// Len is the number of bytes Write writes for the same arguments: an answer's Content-Length,
// known before it is written.
func (o Object) Len(model string, key string, extra []byte) int {
	var n counter
	_ = o.Write(&n, model, key, extra)
	return int(n)
}

// counter counts what is written to it.
type counter int

func (c *counter) Write(b []byte) (int, error) { *c += counter(len(b)); return len(b), nil }

func (c *counter) WriteString(s string) (int, error) { *c += counter(len(s)); return len(s), nil }

// writer keeps the first error and writes strings without converting them when it can.
type writer struct {
	w   io.Writer
	err error
}

func (w *writer) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *writer) str(s string) {
	if w.err == nil {
		_, w.err = io.WriteString(w.w, s)
	}
}

// quoted writes s as strconv.Quote would: as is between quotes when nothing in it needs escaping.
func (w *writer) quoted(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			w.write(strconv.AppendQuote(nil, s))
			return
		}
	}
	w.str(`"`)
	w.str(s)
	w.str(`"`)
}

// needsComma reports whether a new member needs a comma before it: not when the object is still
// empty.
func needsComma(head []byte) bool {
	t := bytes.TrimRight(head, " \t\r\n")
	return !(len(t) > 0 && t[len(t)-1] == '{')
}
