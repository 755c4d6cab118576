// Package oaimsg reads the parts of an OpenAI chat request that every translating adapter reads
// the same way: a message's content parts, an image part's URL, and the 400 for a field a
// provider cannot take. What each provider writes from them stays in its own package.
package oaimsg
