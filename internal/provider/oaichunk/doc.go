// Package oaichunk builds the OpenAI shapes (chat.completion and chat.completion.chunk) that the
// translating adapters answer in. Bodies are appended byte by byte: text coming from a provider
// is usually already a JSON string token and is copied as is, so nothing the gateway only passes
// through is decoded and re-encoded.
package oaichunk
