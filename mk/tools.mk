# Test tools, included by the main Makefile (`include mk/tools.mk`).
# `make test-tools` installs them into the checkout; make test should depend on
# it so a clean machine with only Go and Python 3 runs every test. The script is
# idempotent and takes milliseconds once the tools are in place.

TOOLS_ROOT  := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
VENV        := $(TOOLS_ROOT)/.venv
VENV_BIN    := $(VENV)/bin
VENV_PYTHON := $(VENV_BIN)/python
TOOLS_BIN   := $(TOOLS_ROOT)/.bin

MOTO_SERVER := $(VENV_BIN)/moto_server
CFN_LINT    := $(VENV_BIN)/cfn-lint
SAM         := $(VENV_BIN)/sam
OPENAPI_LINT := $(VENV_BIN)/openapi-spec-validator
STATICCHECK := $(TOOLS_BIN)/staticcheck
RIE         := $(TOOLS_BIN)/aws-lambda-rie

.PHONY: test-tools
test-tools: ## Install pinned test tools into .venv/ and .bin/
	@$(TOOLS_ROOT)/scripts/setup-test-tools.sh
