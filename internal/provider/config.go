package provider

import (
	"net/http"
	"strings"
)

// What an adapter falls back to when the catalog leaves a field of its Config empty.

// NameOr is the provider's catalog name, or def (the wire type's own name) when it has none.
func (c Config) NameOr(def string) string {
	if c.Name == "" {
		return def
	}
	return c.Name
}

// BaseURLOr is the configured base URL without a trailing slash, or def, the provider's public
// endpoint.
func (c Config) BaseURLOr(def string) string {
	if base := strings.TrimRight(c.BaseURL, "/"); base != "" {
		return base
	}
	return def
}

// HTTPClient is the gateway's shared client, or a pool of the adapter's own when none was given
// (tests, tools).
func (c Config) HTTPClient() *http.Client {
	if c.Client == nil {
		return NewHTTPClient()
	}
	return c.Client
}

// notConfigured is the error type of a provider with no usable credential.
const notConfigured = "provider_not_configured"

// NotConfigured is the final error of a provider the gateway cannot call as configured: the
// operator's problem, so the caller is told the model is unavailable (503) rather than given a
// 400, and never failed over since every attempt on it would fail alike.
func NotConfigured(name, problem string, err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: notConfigured, Message: "provider " + name + " " + problem, Err: err}
}
