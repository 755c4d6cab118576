// Package apicontract fuzzes the gateway `make run` serves against its published contract,
// docs/openapi.yaml: its test starts the built cmd/gateway on a temporary store with the demo
// provider and runs schemathesis (pinned in requirements-test.txt) with an admin key and a normal
// key, following the document's links (create a key → read, change, revoke it; create a webhook →
// test it → list its deliveries). Any server error other than an exhausted chain's, any status,
// content type, header or body the document does not describe, fails it.
package apicontract
