// Package adapters names the provider adapters the gateway speaks, by wire type. It is the one
// import that links them all (and the AWS Bedrock client with them), so only what calls providers
// imports it: the local server, the chat, policy-check and console functions. The gateway's
// builders take the adapters from gateway.Deps.Providers; a function that passes none (models,
// usage, admin, receipts, the public routes) carries none.
package adapters

import (
	"github.com/secureai-gateway/gateway/internal/catalog"
	"github.com/secureai-gateway/gateway/internal/provider/anthropic"
	"github.com/secureai-gateway/gateway/internal/provider/bedrock"
	"github.com/secureai-gateway/gateway/internal/provider/gemini"
	"github.com/secureai-gateway/gateway/internal/provider/openai"
)

// Factories are the provider wire types the gateway speaks: a catalog provider's type names one.
func Factories() map[string]catalog.Factory {
	return map[string]catalog.Factory{
		"openai":    openai.New,
		"anthropic": anthropic.New,
		"gemini":    gemini.New,
		"bedrock":   bedrock.New,
	}
}
