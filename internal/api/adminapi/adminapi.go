// Package adminapi serves the admin routes of API keys, users and circuit breakers
// (/admin/api-keys…, /admin/users/{id}, /admin/circuit-breakers…). Each feature is a route table
// of httpapi.HandlerFuncs over its domain service; the endpoint in front (httpapi.Table behind
// the one admin check, httpapi.RequireAdmin) decides 404 and 405 and renders the errors they
// return, so every admin route answers the same mistake the same way.
package adminapi
