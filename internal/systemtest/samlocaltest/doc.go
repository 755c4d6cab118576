// Package samlocaltest runs the stack under `sam local start-api` — the functions' built binaries
// in Docker containers behind SAM's API Gateway emulation, against a moto server — exactly as
// `make sam-local` serves it (scripts/sam-local.sh), and checks what a client gets back. It holds
// tests only. As root (CI) the script starts a Docker daemon private to the test run, installing
// Debian's docker.io where it is missing; where Docker cannot run, the test fails saying how to
// install it.
package samlocaltest
