// Package demo runs the built-in demo provider: an in-process OpenAI-compatible server on
// loopback whose models fail in the ways real providers do, so a newcomer sees a failover with no
// provider account. Its models go through the same adapter and classification as real ones.
package demo

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/chain"
	"github.com/secureai-gateway/gateway/internal/provider/openaifake"
)

// SlowFirstToken is how long demo/slow-first-token waits: past the default first-token timeout.
const SlowFirstToken = 20 * time.Second

// Provider is a running demo upstream.
type Provider struct {
	srv *http.Server
	// Catalog holds the demo providers and models, to merge into the gateway's catalog.
	Catalog *catalog.Catalog
}

// Start listens on a loopback port and returns the demo catalog.
func Start() (*Provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	refused, err := closedPort()
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: openaifake.New(SlowFirstToken), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	model := func(provider, upstream string) *catalog.Model {
		return &catalog.Model{Provider: provider, Upstream: upstream, Regions: []string{"local"}, Points: 1,
			Pricing: catalog.Pricing{InputPer1M: 0, OutputPer1M: 0}, ContextWindow: 8192}
	}
	c := &catalog.Catalog{
		Providers: map[string]catalog.ProviderConfig{
			"demo":             {Type: "openai", BaseURL: "http://" + ln.Addr().String() + "/v1"},
			"demo-unreachable": {Type: "openai", BaseURL: "http://" + refused + "/v1"},
			// Two more names for the demo upstream: the deployments of demo/deployed.
			"demo-primary":   {Type: "openai", BaseURL: "http://" + ln.Addr().String() + "/v1"},
			"demo-secondary": {Type: "openai", BaseURL: "http://" + ln.Addr().String() + "/v1"},
		},
		Models: map[string]*catalog.Model{
			"demo/ok":               model("demo", "ok"),
			"demo/tools":            model("demo", "tools"),
			"demo/error-500":        model("demo", "error-500"),
			"demo/error-429":        model("demo", "error-429-retry-after"),
			"demo/refused":          model("demo-unreachable", "ok"),
			"demo/hang":             model("demo", "hang"),
			"demo/slow-first-token": model("demo", "slow-first-token"),
			"demo/cut":              model("demo", "cut"),
			"demo/continue":         model("demo", "continue"),
			"demo/context-length":   model("demo", "context-length"),
			// One model served by two deployments, the first failing: an attempt on each, one
			// model toward the three.
			"demo/deployed": {Points: 1, ContextWindow: 8192, Deployments: []catalog.Deployment{
				{Provider: "demo-primary", Upstream: "error-500", Region: "local"},
				{Provider: "demo-secondary", Upstream: "ok", Region: "local"},
			}},
		},
	}
	// A coding agent cannot add body members, so the demo names a chain it can ask for by model
	// id: `claude --model demo-agent`, or model = "demo-agent" in Codex's config.
	c.Aliases = map[string]*chain.Defaults{"demo-agent": {Models: []string{"demo/error-500", "demo/ok"}}}
	// demo/cut breaks a stream after its third word; demo/continue can take it on from there
	// (on_interrupt: resume). demo/context-length refuses every prompt as too long for its small
	// window, so a context_length failover goes to any other demo model.
	c.Models["demo/continue"].ContinuePrefix = true
	c.Models["demo/context-length"].ContextWindow = 4096
	for name, m := range c.Models {
		m.Name = name
	}
	return &Provider{srv: srv, Catalog: c}, nil
}

// Close stops the demo upstream.
func (p *Provider) Close() error { return p.srv.Close() }

// closedPort returns a loopback address nothing listens on, so connecting is refused.
func closedPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
