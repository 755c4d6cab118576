package classicapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/secureai-gateway/gateway/internal/api/httpapi"
	"github.com/secureai-gateway/gateway/internal/api/oaiwire"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/completion"
	"github.com/secureai-gateway/gateway/internal/fault"
	"github.com/secureai-gateway/gateway/internal/identity"
)

// Frame prefixes of the classic typed stream: data: {"type":…,"data":…}.
var (
	metadataPrefix = []byte(`{"type":"metadata","data":`)
	chunkPrefix    = []byte(`{"type":"chunk","data":`)
	usagePrefix    = []byte(`{"type":"usage","data":`)
	errorPrefix    = []byte(`{"type":"error","data":`)
	frameSuffix    = []byte(`}`)
)

// metadataFrame opens a classic stream: the envelope without choices and usage, naming the
// serving model and carrying the failover report.
type metadataFrame struct {
	Success  bool     `json:"success"`
	ID       string   `json:"id"`
	Object   string   `json:"object"`
	Created  int64    `json:"created"`
	Model    string   `json:"model"`
	Metadata Metadata `json:"metadata"`
}

// streamError is the data of an error frame: the classic error envelope plus a code.
type streamError struct {
	Success   bool   `json:"success"`
	Error     string `json:"error"`
	Message   string `json:"message"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
}

// stream serves a streamed answer: metadata (once the first token is secured), the provider's
// chunks, usage, [DONE].
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, a *answer) {
	var (
		st     *completion.Stream
		report chain.Report
		err    error
	)
	out := httpapi.AwaitFirstToken(w, r, func() { st, report, err = a.call.Stream(r.Context()) })
	if err != nil {
		if out != nil { // committed while the chain ran (keep-alives): the error is a frame
			h.failedInStream(r, out, err)
			return
		}
		httpapi.Fail(w, r, Render, err) // nothing was sent yet: a plain JSON error
		return
	}
	defer st.Close()
	meta, err := json.Marshal(metadataFrame{Success: true, ID: a.id, Object: "chat.completion.chunk", Created: a.created,
		Model: st.Served, Metadata: a.metadata(st.Served, report)})
	if err != nil {
		return
	}
	if out == nil {
		out = httpapi.StartSSE(w)
	}
	out.Coalesce(st.Ready)
	if frame(out, metadataPrefix, meta) != nil {
		return
	}
	for {
		c, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			h.interrupted(r, out, err)
			return
		}
		if c.UsageOnly {
			continue // the usage frame reports it
		}
		if chunk(out, c.Data, st.Served) != nil {
			return // the caller went away; Close cancels the upstream call
		}
	}
	if st.Usage != nil {
		u, _ := json.Marshal(usageOf(*st.Usage))
		if frame(out, usagePrefix, u) != nil {
			return
		}
	}
	if st.Resumed() {
		// The report of the resume, in a metadata frame before [DONE].
		meta, _ := json.Marshal(metadataFrame{Success: true, ID: a.id, Object: "chat.completion.chunk", Created: a.created,
			Model: st.Served, Metadata: a.metadata(st.Served, st.Report())})
		if frame(out, metadataPrefix, meta) != nil {
			return
		}
	}
	_ = out.Done()
}

// chunk writes a provider chunk as is, only its model replaced by the served model's name.
func chunk(out *httpapi.SSE, data []byte, served string) error {
	if err := out.Begin(); err != nil {
		return err
	}
	w := out.Writer()
	if _, err := w.Write(chunkPrefix); err != nil {
		return err
	}
	if err := oaiwire.WriteObject(w, data, served, "", nil); err != nil {
		return err
	}
	if _, err := w.Write(frameSuffix); err != nil {
		return err
	}
	return out.End()
}

func frame(out *httpapi.SSE, prefix, data []byte) error {
	if err := out.Begin(); err != nil {
		return err
	}
	w := out.Writer()
	for _, b := range [][]byte{prefix, data, frameSuffix} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return out.End()
}

// failedInStream ends a stream committed before its chain secured a first token (keep-alives)
// whose chain then failed: the error it would have answered, as an error frame.
func (h *Handler) failedInStream(r *http.Request, out *httpapi.SSE, err error) {
	if errors.Is(err, chain.ErrCanceled) {
		return
	}
	status, title, message := Describe(err)
	f := fault.From(err)
	code := f.Code
	if code == "" {
		code = f.K.String() // e.g. chain_exhausted
	}
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream failed before its first token, after keep-alives", "request_id", identity.RequestID(r.Context()),
		"status", status, "code", code, "err", err)
	data, _ := json.Marshal(streamError{Error: title, Message: message, Code: code, RequestID: identity.RequestID(r.Context())})
	_ = frame(out, errorPrefix, data)
}

// interrupted ends a stream that broke after its first token with an error frame and no [DONE],
// so the caller cannot mistake the truncated answer for a whole one.
func (h *Handler) interrupted(r *http.Request, out *httpapi.SSE, err error) {
	if errors.Is(err, chain.ErrCanceled) {
		return // the caller went away: nobody to tell, nothing to warn about
	}
	in := completion.AsInterruption(err)
	httpapi.Logger(h.Log).WarnContext(r.Context(), "stream interrupted after first token", "request_id", identity.RequestID(r.Context()), "code", in.Code, "err", err)
	data, _ := json.Marshal(streamError{Error: "Stream interrupted", Message: in.Message, Code: in.Code, RequestID: identity.RequestID(r.Context())})
	_ = frame(out, errorPrefix, data)
}
