# SecureAI Gateway — the two commands: `make run` (local gateway) and `make test` (everything CI runs).
SHELL := /bin/bash
.DEFAULT_GOAL := help
export GOFLAGS := -mod=readonly
export AWS_XRAY_SDK_DISABLED := true

include $(wildcard mk/*.mk)

.PHONY: help run test unit lint bench build invoke invoke-local sam sam-local clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

run: ## run the gateway on 127.0.0.1:8080 (PORT overrides) with the embedded store and the demo provider
	@echo "make run: building the gateway (the first run downloads and compiles its dependencies: a minute or two)…"
	go run ./cmd/gateway

test: lint unit ## run every test: vet, staticcheck, go test -race, AWS contract and emulator tests

unit: test-tools
	go test -race -count=1 -timeout 30m ./...

lint: test-tools
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
	$(STATICCHECK) ./...
	$(OPENAPI_LINT) docs/openapi.yaml

bench: test-tools ## measure the gateway as make run runs it against a direct call, then the Lambda path under the emulator (-micro: in-process), then hedging against a heavy-tailed provider — not part of the tests
	go run ./cmd/bench
	go run ./cmd/bench -cloud
	go run ./cmd/bench -hedge

clean: ## remove build output and the local store
	rm -rf build .aws-sam .secureai

# ---------- Lambda functions ----------
# One binary per endpoint, for provided.al2023 on arm64. `sam build` calls build-<LogicalId>.
FUNCTIONS := $(notdir $(wildcard functions/*))
LAMBDA_GOFLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w -buildid='
lambda_build = CGO_ENABLED=0 GOOS=linux GOARCH=$(or $(GOARCH_LAMBDA),arm64) go build $(LAMBDA_GOFLAGS) -o $(2)/bootstrap ./functions/$(1)

build: ## build every Lambda function into build/<name>/bootstrap
	@$(foreach f,$(FUNCTIONS),echo "build $(f)" && $(call lambda_build,$(f),build/$(f)) &&) true

build-OpenAIChatFunction: ; $(call lambda_build,openai-chat,$(ARTIFACTS_DIR))
build-ClassicChatFunction: ; $(call lambda_build,classic-chat,$(ARTIFACTS_DIR))
build-MessagesFunction: ; $(call lambda_build,messages,$(ARTIFACTS_DIR))
build-ResponsesFunction: ; $(call lambda_build,responses,$(ARTIFACTS_DIR))
build-ModelsFunction: ; $(call lambda_build,models,$(ARTIFACTS_DIR))
build-WebhookDispatcherFunction: ; $(call lambda_build,webhook-dispatcher,$(ARTIFACTS_DIR))
build-AuditWriterFunction: ; $(call lambda_build,audit-writer,$(ARTIFACTS_DIR))
build-PolicyCheckFunction: ; $(call lambda_build,policy-check,$(ARTIFACTS_DIR))
build-UsageFunction: ; $(call lambda_build,usage,$(ARTIFACTS_DIR))
build-ReceiptsFunction: ; $(call lambda_build,receipts,$(ARTIFACTS_DIR))
build-JWKSFunction: ; $(call lambda_build,jwks,$(ARTIFACTS_DIR))
build-AdminFunction: ; $(call lambda_build,admin,$(ARTIFACTS_DIR))
build-EventRelayFunction: ; $(call lambda_build,event-relay,$(ARTIFACTS_DIR))
build-RefundSweepFunction: ; $(call lambda_build,refund-sweep,$(ARTIFACTS_DIR))
build-ConsoleFunction: ; $(call lambda_build,console,$(ARTIFACTS_DIR))

invoke: test-tools ## run one function through `sam local invoke` (Docker; no registry or AWS needed): make invoke FN=OpenAIChatFunction EVENT=events/openai-chat-plain.json
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<LogicalId> EVENT=events/<file>.json"; exit 2; }
	@scripts/sam-local.sh invoke "$(FN)" "$(EVENT)"

sam-local: test-tools ## serve the API with `sam local start-api` (Docker) against a local emulator on 127.0.0.1:3000 (SAM_LOCAL_PORT overrides)
	@scripts/sam-local.sh start-api "$(or $(SAM_LOCAL_PORT),3000)"

invoke-local: test-tools ## run one function with one event without Docker (Lambda emulator + moto): make invoke-local FN=openai-chat EVENT=events/openai-chat-failover.json
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke-local FN=<functions/ dir, e.g. openai-chat> EVENT=events/<file>.json"; exit 2; }
	@scripts/invoke-local.sh "$(FN)" "$(EVENT)"

sam: test-tools ## run the pinned SAM CLI (.venv/bin/sam): make sam ARGS=build, make sam ARGS="deploy --guided"
	$(SAM) $(ARGS)
