// Package oaiwire edits OpenAI-shaped JSON objects on their way to the caller without decoding
// them: the provider's bytes are copied to the writer with the model replaced and the gateway's
// own object appended.
package oaiwire

import (
	"bytes"
	"io"
	"strconv"

	"github.com/tidwall/gjson"
)

// WriteObject writes obj with its "model" set to model and, when extra is not empty, the raw JSON
// extra added under key. obj must be a JSON object (the provider adapters guarantee it).
func WriteObject(w io.Writer, obj []byte, model string, key string, extra []byte) error {
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 {
		_, err := w.Write(obj)
		return err
	}
	var scratch [128]byte
	quoted := strconv.AppendQuote(scratch[:0], model)
	m := gjson.GetBytes(obj, "model")
	var err error
	write := func(b []byte) {
		if err == nil {
			_, err = w.Write(b)
		}
	}
	if m.Exists() && m.Index > 0 {
		write(obj[:m.Index])
		write(quoted)
		write(obj[m.Index+len(m.Raw) : end])
	} else {
		write(obj[:end])
		write(sep(obj[:end]))
		write([]byte(`"model":`))
		write(quoted)
	}
	if len(extra) > 0 {
		write([]byte(`,"`))
		write([]byte(key))
		write([]byte(`":`))
		write(extra)
	}
	write(obj[end:])
	return err
}

// sep is the comma needed before a new member, none when the object is still empty.
func sep(head []byte) []byte {
	t := bytes.TrimRight(head, " \t\r\n")
	if len(t) > 0 && t[len(t)-1] == '{' {
		return nil
	}
	return []byte{','}
}
