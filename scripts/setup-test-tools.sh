#!/usr/bin/env bash
# Installs the test tools into the checkout so `make test` needs only Go and Python 3:
#   .venv/  moto_server, cfn-lint, sam (from requirements-test.txt)
#   .venv-checkov/  checkov (from requirements-checkov.txt; its boto3 pin conflicts with sam's)
#   .bin/   aws-lambda-rie, staticcheck (pinned Go modules)
#   .agent-clients/  Claude Code and Codex CLI (npm, from scripts/agent-clients/package-lock.json)
#   chromium (Debian package, for the console browser test; apt-get when root, else a message)
# Idempotent and cheap on a warm machine: pip runs only when requirements-test.txt changed
# (a stamp holds its hash), npm only when the agent clients' lock changed, and a Go tool is
# rebuilt only when its pinned version changed.
set -euo pipefail

RIE_MOD=github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE_VERSION=v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK_MOD=honnef.co/go/tools/cmd/staticcheck
STATICCHECK_VERSION=v0.8.2 # 2026.x line; its go.mod requires Go 1.26

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PYTHON=${PYTHON:-python3}
venv=.venv
bin=.bin

hash_of() { sha256sum "$1" | cut -d' ' -f1; }

# Python tools. The stamp also names the venv's Python, so a venv rebuilt on a
# different interpreter gets its packages reinstalled.
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c '' 2>/dev/null; then
	echo "setup-test-tools: creating $venv with $PYTHON"
	"$PYTHON" -m venv --clear "$venv" || {
		echo "setup-test-tools: '$PYTHON -m venv' failed; install Python 3 with venv (Debian/Ubuntu: python3-venv)" >&2
		exit 1
	}
fi
req_hash="$(hash_of requirements-test.txt) $("$venv/bin/python" --version 2>&1)"
stamp=$venv/.requirements-test.stamp
if [[ ! -f $stamp || $(cat "$stamp") != "$req_hash" ]]; then
	echo "setup-test-tools: installing requirements-test.txt into $venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	echo "$req_hash" >"$stamp"
fi

# checkov in its own venv: it pins boto3 to another version than aws-sam-cli does.
checkov_venv=.venv-checkov
if [[ ! -x $checkov_venv/bin/python ]] || ! "$checkov_venv/bin/python" -c '' 2>/dev/null; then
	echo "setup-test-tools: creating $checkov_venv with $PYTHON"
	"$PYTHON" -m venv --clear "$checkov_venv"
fi
checkov_hash="$(hash_of requirements-checkov.txt) $("$checkov_venv/bin/python" --version 2>&1)"
checkov_stamp=$checkov_venv/.requirements.stamp
if [[ ! -f $checkov_stamp || $(cat "$checkov_stamp") != "$checkov_hash" ]]; then
	echo "setup-test-tools: installing requirements-checkov.txt into $checkov_venv"
	"$checkov_venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
	"$checkov_venv/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	echo "$checkov_hash" >"$checkov_stamp"
fi

# Go tools: a per-tool stamp records the installed version so a pin bump reinstalls.
go_tool() { # name module version
	local name=$1 mod=$2 version=$3
	local tstamp=$bin/.$name.version
	if [[ -x $bin/$name && -f $tstamp && $(cat "$tstamp") == "$version" ]]; then
		return
	fi
	echo "setup-test-tools: go install $mod@$version"
	GOBIN="$root/$bin" go install "$mod@$version"
	echo "$version" >"$tstamp"
}
mkdir -p "$bin"
go_tool aws-lambda-rie "$RIE_MOD" "$RIE_VERSION"
go_tool staticcheck "$STATICCHECK_MOD" "$STATICCHECK_VERSION"

# The coding-agent CLIs the agent-client tests run (internal/systemtest/agentclients), at the exact
# versions scripts/agent-clients/package-lock.json pins, installed with `npm ci` into a copy of that
# folder so node_modules stays out of the tracked tree. The stamp holds the manifests' hash and
# Node's version; after an install each CLI must print its version (Claude Code's postinstall
# puts its native binary in place).
clients=.agent-clients
if ! command -v npm >/dev/null 2>&1; then
	echo "setup-test-tools: the agent-client tests need Node.js and npm (Debian/Ubuntu: sudo apt-get install -y nodejs npm)" >&2
	exit 1
fi
clients_hash="$(cat scripts/agent-clients/package.json scripts/agent-clients/package-lock.json | sha256sum | cut -d' ' -f1) $(node --version)"
clients_stamp=$clients/.install.stamp
if [[ ! -f $clients_stamp || $(cat "$clients_stamp") != "$clients_hash" ]]; then
	echo "setup-test-tools: npm ci of Claude Code and Codex CLI into $clients"
	mkdir -p "$clients"
	cp scripts/agent-clients/package.json scripts/agent-clients/package-lock.json "$clients/"
	(cd "$clients" && npm ci --no-audit --no-fund --loglevel=error)
	check_home=$(mktemp -d)
	for cli in claude codex; do
		HOME=$check_home CODEX_HOME=$check_home DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
			"$clients/node_modules/.bin/$cli" --version >/dev/null 2>&1 || {
			rm -rf "$check_home"
			echo "setup-test-tools: $clients/node_modules/.bin/$cli --version failed after npm ci" >&2
			exit 1
		}
	done
	rm -rf "$check_home"
	echo "$clients_hash" >"$clients_stamp"
fi

# Chromium, for the console's browser test (internal/api/console): the distribution's package, never
# a browser download. Installed here when missing and this runs as root; otherwise the setup
# stops saying how to install it.
if ! command -v chromium >/dev/null 2>&1; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
		echo "setup-test-tools: apt-get install -y chromium"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends chromium >/dev/null ||
			{ apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null; }
	else
		echo "setup-test-tools: the console's browser test needs Chromium; install Debian's package: sudo apt-get install -y chromium" >&2
		exit 1
	fi
fi
