package provider

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/secureai-gateway/gateway/internal/jsonview"
)

// Wire names an API's request and answer format, for a request a surface received in a format of
// its own (SPEC 12): an adapter whose provider speaks that wire passes the caller's bytes through
// instead of translating the Chat Completions body.
type Wire string

const (
	WireMessages  Wire = "anthropic-messages" // Anthropic's /v1/messages
	WireResponses Wire = "openai-responses"   // OpenAI's /v1/responses
)

// Native is the caller's own request, as its surface received it. An adapter that passes it
// through answers with Native chunks and responses: the provider's own events and objects.
type Native struct {
	Wire Wire
	Body []byte // the caller's bytes; never modified
	// Beta is the caller's anthropic-beta header: the features a Messages body's shape depends
	// on (context_management, interleaved thinking…). The one caller header that may go on, and
	// only with the caller's own body.
	Beta string
}

// NativeIn reports whether r carries a caller's request in wire w, to pass through.
func (r *Request) NativeIn(w Wire) bool { return r.Native != nil && r.Native.Wire == w }

// gatewayFields are the members of a request that are the gateway's own, never a provider's.
var gatewayFields = map[string]bool{"model": true, "models": true, "fallback_models": true, "fallbacks": true,
	"redundancy": true, "smltp_policy": true, "user_id": true, "stream": true, "stream_options": true}

// NativeBody is n's body as it goes to a provider of its wire: the gateway's own members left
// out, model set to the provider's id, stream as asked. Every other member passes through
// untouched — no decoding, no re-encoding — thinking signatures and cache_control included.
func (n *Native) NativeBody(model string, stream bool) []byte {
	out := make([]byte, 0, len(n.Body)+64)
	out = strconv.AppendQuote(append(out, `{"model":`...), model)
	gjson.Parse(jsonview.String(n.Body)).ForEach(func(k, v gjson.Result) bool {
		if !gatewayFields[k.Str] {
			out = append(append(append(append(out, ','), k.Raw...), ':'), v.Raw...)
		}
		return true
	})
	if stream {
		out = append(out, `,"stream":true`...)
	}
	return append(out, '}')
}
