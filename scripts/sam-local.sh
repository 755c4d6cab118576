#!/usr/bin/env bash
# Runs the stack under `sam local` (Docker) against a local AWS emulator, with no registry and no
# AWS account (`make invoke`, `make sam-local`):
#
#   scripts/sam-local.sh invoke <LogicalId> <event.json>   e.g. OpenAIChatFunction events/openai-chat-plain.json
#   scripts/sam-local.sh start-api [port]                  the API on http://127.0.0.1:<port> (3000)
#
# Steps:
#  - Docker: the running one (DOCKER_HOST or the default socket). When none answers, or with
#    SAM_LOCAL_PRIVATE_DOCKER=1 (the tests), it starts a daemon private to this run
#    (scripts/private-dockerd.sh: needs root; installs Debian's docker.io where dockerd is missing).
#  - The base image public.ecr.aws/lambda/provided:al2023-<arch>: used if present, else pulled;
#    when the pull fails (no registry), a STAND-IN is built locally: a static busybox from
#    Debian's busybox-static package, enough to run a Go `bootstrap` (SAM adds its Lambda
#    emulator on top). It is labelled secureai.stand-in=true and the script says so.
#  - `sam build` for this machine's architecture (GOARCH_LAMBDA), into a scratch build
#    directory whose template says that architecture (the deployed one says arm64).
#  - A moto_server on the Docker bridge's own address (this machine; the containers reach it,
#    nothing else is contacted), prepared by cmd/localaws with events/env.json's tables, the
#    signing keyset and the events' fixed test key; SAM's own account lookup (STS) goes to it too.
#
# Under `sam local` the functions see AWS_SAM_LOCAL=true and answer streams buffered (SAM's
# start-api cannot pass a stream through): an SSE body arrives whole.
# Everything it started (moto, SAM's containers, a private dockerd) is stopped on exit.
set -euo pipefail

usage="usage: $0 invoke <LogicalId> <event.json> | $0 start-api [port]"
mode=${1:-}
case $mode in
invoke) [[ $# -eq 3 && -n $2 && -n $3 ]] || { echo "$usage" >&2; exit 2; } ;;
start-api) [[ $# -le 2 ]] || { echo "$usage" >&2; exit 2; } ;;
*) echo "$usage" >&2; exit 2 ;;
esac
say() { echo "sam-local: $*" >&2; }

root=$(cd "$(dirname "$0")/.." && pwd)
event_abs=
if [[ $mode == invoke ]]; then
	event_abs=$3
	[[ -f $event_abs ]] || event_abs=$root/$3 # relative to the checkout (make runs there)
	[[ -f $event_abs ]] || { say "no event file $3"; exit 2; }
	event_abs=$(cd "$(dirname "$event_abs")" && pwd)/$(basename "$event_abs")
fi
cd "$root"
sam=$root/.venv/bin/sam moto=$root/.venv/bin/moto_server python=$root/.venv/bin/python
for tool in "$sam" "$moto" "$python"; do
	[[ -x $tool ]] || { say "$tool is missing: run 'make test-tools'"; exit 1; }
done
command -v docker >/dev/null || command -v dockerd >/dev/null || [[ $(id -u) == 0 ]] ||
	{ say "Docker is not installed: install it (Debian/Ubuntu: 'sudo apt-get install docker.io') or run as root, which installs it"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/sam-local.XXXXXX")
pids=() private=
set -m # each background tool in its own process group, so stopping it stops its children
cleanup() {
	local pid
	for pid in ${pids[@]+"${pids[@]}"}; do kill -INT -- "-$pid" 2>/dev/null || true; done # SAM removes its containers on INT
	for pid in ${pids[@]+"${pids[@]}"}; do
		for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	[[ -n $private ]] && "$root/scripts/private-dockerd.sh" stop "$private"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# tracked runs a command as a tracked job, so a TERM while it runs stops it too (a trap runs only
# after a foreground command ends).
tracked() {
	local p rc=0
	"$@" &
	p=$!
	pids+=("$p")
	wait "$p" || rc=$?
	unset 'pids[-1]'
	return "$rc"
}
fail() {
	say "$*"
	local f
	for f in "$work"/*.log; do [[ -s $f ]] && { echo "--- $(basename "$f")"; tail -n 50 "$f"; } >&2; done
	exit 1
}

# ---- Docker
if [[ ${SAM_LOCAL_PRIVATE_DOCKER:-} == 1 ]] || ! docker version >/dev/null 2>&1; then
	[[ ${SAM_LOCAL_PRIVATE_DOCKER:-} == 1 ]] || say "no Docker daemon answers; starting one private to this run"
	private=$work/docker
	line=$("$root/scripts/private-dockerd.sh" start "$private") || fail "could not start a Docker daemon"
	export "${line?}"
fi
gateway=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null) || true
[[ -n $gateway ]] || fail "Docker's bridge network has no gateway address (is this Docker on another machine?)"
ip -4 addr show 2>/dev/null | grep -q "inet $gateway/" ||
	fail "Docker's bridge address $gateway is not on this machine: the containers could not reach a local emulator"

# ---- base image
case $(uname -m) in
x86_64 | amd64) arch=x86_64 goarch=amd64 ;;
aarch64 | arm64) arch=arm64 goarch=arm64 ;;
*) fail "no Lambda architecture for this machine ($(uname -m))" ;;
esac
image=public.ecr.aws/lambda/provided:al2023-$arch
if docker image inspect "$image" >/dev/null 2>&1; then
	[[ $(docker image inspect -f '{{index .Config.Labels "secureai.stand-in"}}' "$image") == true ]] &&
		say "using the STAND-IN $image built earlier (busybox, not Amazon Linux; 'docker rmi $image' to pull the real one)"
elif timeout 120 docker pull -q "$image" >"$work/pull.log" 2>&1; then
	:
else
	say "cannot pull $image ($(tail -n 1 "$work/pull.log")): building a STAND-IN from Debian's busybox-static"
	command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
		fail "no apt-get/dpkg-deb to fetch busybox-static: pull $image on a machine with registry access ('docker save' / 'docker load')"
	mkdir -p "$work/deb" "$work/rootfs"
	download() { (cd "$work/deb" && apt-get download -q busybox-static) >>"$work/apt.log" 2>&1; }
	# A fresh machine may have no package lists yet; root can fetch them.
	download || { [[ $(id -u) == 0 ]] && apt-get update -q >>"$work/apt.log" 2>&1 && download; } ||
		fail "apt-get download busybox-static failed"
	dpkg-deb -x "$work"/deb/busybox-static_*.deb "$work/deb/x"
	bb=$work/deb/x/bin/busybox
	mkdir -p "$work/rootfs"/{bin,tmp,var/task,var/runtime,opt,etc}
	chmod 1777 "$work/rootfs/tmp"
	cp "$bb" "$work/rootfs/bin/busybox"
	for applet in $("$bb" --list); do [[ $applet == busybox ]] || ln -s busybox "$work/rootfs/bin/$applet"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$work/rootfs/etc/passwd"
	tar -C "$work/rootfs" -c . | docker import \
		--change 'LABEL secureai.stand-in=true' \
		--change "LABEL org.opencontainers.image.description=\"STAND-IN for $image built from Debian's busybox-static by scripts/sam-local.sh: runs a static Go bootstrap only\"" \
		--change 'ENV PATH=/bin' --change 'WORKDIR /var/task' - "$image" >/dev/null ||
		fail "docker import of the stand-in image failed"
	say "built the STAND-IN $image (label secureai.stand-in=true)"
fi

# ---- build for this machine
say "building the functions for $arch (sam build)…"
t0=$SECONDS
GOARCH_LAMBDA=$goarch tracked "$sam" build --template template.yaml --build-dir "$work/build" >"$work/build.log" 2>&1 ||
	fail "sam build failed"
sed -i -E "/^ *Architectures:/,/^ *[A-Za-z]/ s/\barm64\b/$arch/" "$work/build/template.yaml"
grep -q "$arch" "$work/build/template.yaml" || fail "could not set the built template's architecture to $arch"
# The optional OpenTelemetry collector layer (OtelLayerArn) is a conditional SAM local cannot
# resolve (it reads the !If as a layer ARN), and a layer would be pulled from AWS anyway: the
# local copy runs without it (traces go to X-Ray's seam, which is off here).
"$python" - "$work/build/template.yaml" <<'PY' || fail "could not drop the layers from the built template"
import sys
from samcli.yamlhelper import yaml_dump, yaml_parse
path = sys.argv[1]
with open(path) as f:
    t = yaml_parse(f.read())
(t.get("Globals") or {}).get("Function", {}).pop("Layers", None)
for r in (t.get("Resources") or {}).values():
    if r.get("Type") == "AWS::Serverless::Function":
        (r.get("Properties") or {}).pop("Layers", None)
with open(path, "w") as f:
    f.write(yaml_dump(t))
PY
say "built in $((SECONDS - t0)) s"

# ---- the emulator, on the bridge's address
port=$("$python" -c 'import socket,sys; s = socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$gateway")
"$moto" -H "$gateway" -p "$port" >"$work/moto.log" 2>&1 &
pids+=($!)
endpoint=http://$gateway:$port
for ((i = 0; ; i++)); do
	"$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$endpoint/moto-api/" 2>/dev/null && break
	kill -0 "${pids[-1]}" 2>/dev/null || fail "moto_server exited before it listened"
	((i < 600)) || fail "moto_server did not answer within 60 s"
	sleep 0.1
done
tracked go build -o "$work/localaws" ./cmd/localaws >"$work/localaws-build.log" 2>&1 || fail "building cmd/localaws failed"
key=sk-7e577e577e577e577e577e577e577e577e577e577e577e577e577e577e577e57 # events/README.md's test key
"$work/localaws" -endpoint "$endpoint" -env events/env.json -key "$key" >"$work/env.lines" 2>"$work/localaws.log" ||
	fail "preparing moto failed"
"$python" -c 'import json, sys
env = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if "=" in l)
json.dump({"Parameters": env}, open(sys.argv[2], "w"), indent=1)' "$work/env.lines" "$work/env.json"

# SAM itself: dummy credentials, nothing from the caller's AWS setup, its account lookup to moto.
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_PROFILE AWS_ENDPOINT_URL
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
	AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
	AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL_STS=$endpoint SAM_CLI_TELEMETRY=0
common=(--template "$work/build/template.yaml" --env-vars "$work/env.json" --skip-pull-image
	--container-host 127.0.0.1 --container-host-interface 127.0.0.1)
if [[ $mode == invoke ]]; then
	tracked "$sam" local invoke "$2" --event "$event_abs" "${common[@]}" >"$work/answer" 2>"$work/sam.log" ||
		fail "sam local invoke failed"
	[[ ${SAM_LOCAL_LOGS:-} == 1 ]] && cat "$work/sam.log" >&2
	cat "$work/answer"
	echo
	exit 0
fi
api_port=${2:-3000}
say "starting the API on http://127.0.0.1:$api_port (emulator $endpoint); Ctrl-C stops everything"
tracked "$sam" local start-api "${common[@]}" --host 127.0.0.1 --port "$api_port" --warm-containers LAZY --no-watch
