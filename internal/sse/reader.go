// Package sse reads Server-Sent Events incrementally, one event at a time, without holding more
// than the current event in memory.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxEventSize bounds one event; a larger one is malformed input, not a reason to grow forever.
const MaxEventSize = 4 << 20

// ErrEventTooLarge reports an event over MaxEventSize.
var ErrEventTooLarge = errors.New("sse: event too large")

// Event is one dispatched event. Data aliases the reader's buffer and is valid until the next call.
type Event struct {
	Name []byte
	Data []byte
}

// Reader parses an SSE stream.
type Reader struct {
	br   *bufio.Reader
	data []byte
	name []byte
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 4<<10)}
}

// Next returns the next event with data or a name. It returns io.EOF at a clean end of input
// (after a blank line or with no pending event) and io.ErrUnexpectedEOF when input stops inside
// an event.
func (r *Reader) Next() (Event, error) {
	r.data = r.data[:0]
	r.name = r.name[:0]
	pending, hasData := false, false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && pending {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if pending {
				return Event{Name: r.name, Data: r.data}, nil
			}
			continue
		}
		if line[0] == ':' { // comment / keep-alive
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			hasData = true
			if len(r.data)+len(value) > MaxEventSize {
				return Event{}, ErrEventTooLarge
			}
			r.data = append(r.data, value...)
			pending = true
		case "event":
			r.name = append(r.name[:0], value...)
			pending = true
		}
	}
}

// EventBuffered reports whether a whole event has already arrived, so that Next returns it without
// waiting for input. Bytes of a comment (keep-alive) or of an event still arriving do not count.
func (r *Reader) EventBuffered() bool {
	buf, _ := r.br.Peek(r.br.Buffered())
	pending := false
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return false
		}
		line := bytes.TrimSuffix(buf[:i], []byte{'\r'})
		buf = buf[i+1:]
		switch {
		case len(line) == 0:
			if pending {
				return true
			}
		case line[0] == ':':
		default:
			field, _, _ := bytes.Cut(line, []byte{':'})
			pending = pending || string(field) == "data" || string(field) == "event"
		}
	}
}

func (r *Reader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A long line: gather it, bounded.
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			if len(buf) > MaxEventSize {
				return nil, ErrEventTooLarge
			}
			line, err = r.br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil && !(err == io.EOF && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, nil
}
