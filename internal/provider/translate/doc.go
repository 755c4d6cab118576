// Package translate is what the adapters that translate between the OpenAI Chat Completions shape
// and a provider's own wire format share: reading the parts of an OpenAI request that every one of
// them reads alike (content parts, image URLs, the 400 for a field a provider cannot take),
// building the OpenAI answers (chat.completion and chat.completion.chunk), the stream over a
// provider's Server-Sent Events, and the call flow of an HTTP adapter (Provider).
//
// OpenAI bodies are appended byte by byte: text coming from a provider is usually already a JSON
// string token and is copied as is, so nothing the gateway only passes through is decoded and
// re-encoded. What each provider writes stays in its own package.
package translate
