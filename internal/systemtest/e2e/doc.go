// Package e2e holds end-to-end tests that run the assembled gateway (localserver.NewGateway + Mux) over real
// HTTP against fake upstreams — OpenAI-compatible ones (internal/provider/openaifake), one per fault a provider
// shows, and small fakes of the Anthropic Messages and OpenAI Responses wires — on every chat surface: the
// conformance matrix (TestFaults) runs each fault on /v1/chat/completions, /chat/completions, /v1/messages and
// /v1/responses, plain and streamed. It has no non-test code beyond this file.
package e2e
