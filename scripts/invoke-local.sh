#!/usr/bin/env bash
# Runs one Lambda function with one sample event, without Docker (`make invoke-local`):
#
#   scripts/invoke-local.sh <function> <event>   e.g.  openai-chat events/openai-chat-failover.json
#
# <function> is a directory under functions/. The script builds that function's bootstrap for
# this machine, starts a moto_server (DynamoDB, Secrets Manager, SQS) and prepares it with
# cmd/localaws (the tables and signing secret named in events/env.json, and the fixed test key the
# events carry), runs the bootstrap under the Lambda Runtime Interface Emulator, POSTs the event
# once, prints the function's answer on stdout and stops everything again. The tools come from
# `make test-tools` (.venv/bin/moto_server, .bin/aws-lambda-rie). What the function and the
# emulator log (the lines CloudWatch Logs would hold) goes to stderr with INVOKE_LOCAL_LOGS=1;
# every tool's log does when the invocation fails.
#
# A streaming function (the chat functions) answers as Lambda streams to API Gateway: a JSON
# prelude (status, headers), then the body; the 8 NUL bytes between them are printed as one
# newline.
set -euo pipefail

usage="usage: $0 <function> <event.json>   (function: one of functions/*; e.g. openai-chat events/openai-chat-plain.json)"
[[ $# -eq 2 && -n $1 && -n $2 ]] || { echo "$usage" >&2; exit 2; }
fn=$1 event=$2

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -f $event ]]; then
	event_abs=$(cd "$(dirname "$event")" && pwd)/$(basename "$event")
else
	event_abs=$root/$event # relative to the checkout (make runs there)
fi
cd "$root"
if [[ ! -d functions/$fn ]]; then
	echo "invoke-local: no function '$fn'; one of: $(ls functions | tr '\n' ' ')" >&2
	exit 2
fi
[[ -f $event_abs ]] || { echo "invoke-local: no event file $event" >&2; exit 2; }
moto=$root/.venv/bin/moto_server python=$root/.venv/bin/python rie=$root/.bin/aws-lambda-rie
for tool in "$moto" "$python" "$rie"; do
	[[ -x $tool ]] || { echo "invoke-local: $tool is missing: run 'make test-tools'" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "invoke-local: curl is needed to send the event" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/invoke-local.XXXXXX")
pids=()
# Each tool runs in its own process group (job control), so stopping it also stops its children
# (the emulator's bootstrap).
set -m
cleanup() {
	local pid
	for pid in ${pids[@]+"${pids[@]}"}; do
		kill -TERM -- "-$pid" 2>/dev/null || true
	done
	for pid in ${pids[@]+"${pids[@]}"}; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

logs() { # the named logs (all on failure), to stderr
	local f files=("$@")
	((${#files[@]})) || files=("$work"/*.log)
	for f in "${files[@]}"; do
		[[ -s $f ]] && { echo "--- $(basename "$f")"; cat "$f"; } >&2
	done
	return 0
}
fail() { echo "invoke-local: $*" >&2; logs; exit 1; }

free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_http() { # url what pid: until anything answers at url, while pid lives
	local i
	for ((i = 0; i < 600; i++)); do
		curl -s -o /dev/null --max-time 1 "$1" && return 0
		kill -0 "$3" 2>/dev/null || fail "$2 exited before it listened"
		sleep 0.1
	done
	fail "$2 did not answer at $1 within 60 s"
}

# The builds overlap with moto's start. As deployed (lambda.norpc, static), but for this machine.
echo "invoke-local: building functions/$fn and cmd/localaws…" >&2
(
	CGO_ENABLED=0 go build -tags lambda.norpc -ldflags='-s -w' -o "$work/bootstrap" "./functions/$fn" &&
		go build -o "$work/localaws" ./cmd/localaws
) >"$work/build.log" 2>&1 &
build=$!
pids+=("$build")

port=$(free_port)
"$moto" -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
moto_pid=$!
pids+=("$moto_pid")
endpoint=http://127.0.0.1:$port
wait_http "$endpoint/moto-api/" moto_server "$moto_pid"
wait "$build" || fail "build failed"

# Nothing from the caller's AWS setup (a profile, real credentials, a configured endpoint) may
# reach the function: it talks to moto only, with dummy credentials.
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
	AWS_SESSION_TOKEN= AWS_PROFILE= AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
	AWS_EC2_METADATA_DISABLED=true AWS_IGNORE_CONFIGURED_ENDPOINT_URLS= AWS_XRAY_SDK_DISABLED=true SECUREAI_TRACES=off AWS_SAM_LOCAL=
# The fixed test key of events/README.md (published, never valid in a deployed stack).
key=sk-7e577e577e577e577e577e577e577e577e577e577e577e577e577e577e577e57
env_lines=$("$work/localaws" -endpoint "$endpoint" -env events/env.json -key "$key" 2>"$work/localaws.log") ||
	fail "preparing moto failed"
fn_env=()
while IFS= read -r line; do fn_env+=("$line"); done <<<"$env_lines"
fn_env+=(SECUREAI_DEMO=true)

api=127.0.0.1:$(free_port) emu=127.0.0.1:$(free_port)
env "${fn_env[@]}" "$rie" --runtime-interface-emulator-address "$emu" --runtime-api-address "$api" \
	"$work/bootstrap" >"$work/function.log" 2>&1 &
rie_pid=$!
pids+=("$rie_pid")
wait_http "http://$emu/" aws-lambda-rie "$rie_pid"

status=$(curl -s -o "$work/response" -w '%{http_code}' --max-time 120 -H 'Content-Type: application/json' \
	--data-binary "@$event_abs" "http://$emu/2015-03-31/functions/function/invocations") || fail "invoke failed (curl exit $?)"
[[ $status == 200 ]] || { cat "$work/response" >&2; fail "the emulator answered $status"; }
"$python" -c 'import sys; out = sys.stdin.buffer.read(); sys.stdout.buffer.write(out.replace(b"\0" * 8, b"\n", 1) + b"\n")' <"$work/response"
[[ ${INVOKE_LOCAL_LOGS:-} == 1 ]] && logs "$work/function.log"
exit 0
