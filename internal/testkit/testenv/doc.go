// Package testenv gives tests the real stand-ins for AWS: a moto_server shared
// per test binary, the Lambda Runtime Interface Emulator, and Go builds of
// function binaries. The tools live in the checkout (.venv/, .bin/), installed by
// `make test` via scripts/setup-test-tools.sh.
//
// A missing tool fails the test, never skips it: a skip would let CI pass
// without ever running the AWS contract tests.
package testenv
