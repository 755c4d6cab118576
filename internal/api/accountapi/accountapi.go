// Package accountapi serves what an API key reads about its own account: GET /usage (its quota,
// limits and spend) and GET /receipts/{bundleId} (the signed receipt of a request it made). Each
// is a route table of httpapi.HandlerFuncs; the endpoint in front authenticates the key and
// renders the errors they return in the classic envelope.
package accountapi
