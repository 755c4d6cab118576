// Package e2e holds end-to-end tests that run the assembled gateway (localserver.NewGateway + Mux) over real
// HTTP against fake OpenAI-compatible upstreams (internal/provider/openaifake), one per fault a provider
// shows. It has no non-test code beyond this file.
package e2e
