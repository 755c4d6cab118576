# SecureAI Gateway — the two commands: `make run` (local gateway) and `make test` (everything CI runs).
SHELL := /bin/bash
.DEFAULT_GOAL := help
export GOFLAGS := -mod=readonly
export AWS_XRAY_SDK_DISABLED := true

include $(wildcard mk/*.mk)

.PHONY: help run test unit lint bench build clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

run: ## run the gateway on 127.0.0.1:8080 (PORT overrides) with the embedded store and the demo provider
	go run ./cmd/gateway

test: lint unit ## run every test: vet, staticcheck, go test -race, AWS contract and emulator tests

unit:
	go test -race -count=1 -timeout 20m ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...

bench: ## measure the latency the gateway adds over a direct call (not part of the tests)
	go run ./cmd/bench

clean: ## remove build output and the local store
	rm -rf build .aws-sam .secureai
