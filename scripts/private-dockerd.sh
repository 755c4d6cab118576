#!/usr/bin/env bash
# Starts and stops a Docker daemon private to one run of `sam local` (scripts/sam-local.sh), so a
# test run neither needs nor touches the machine's own Docker, and parallel runs don't clash:
#
#   scripts/private-dockerd.sh start <dir>   prints DOCKER_HOST=unix://<dir>/docker.sock
#   scripts/private-dockerd.sh stop <dir>
#
# Everything it owns lives under <dir> (socket, data root, exec root with its own containerd,
# pidfile, log) plus one Linux bridge, sai<N> with 10.213.<N>.1/24, a subnet no route of this
# machine covers. The daemon runs with --iptables=false and --ip-masq=false: it writes no firewall
# rule and translates no address, so its containers reach this machine at the bridge's address
# and can open no connection beyond it. `stop` stops the daemon, unmounts what it left under
# <dir>, deletes the bridge and <dir>: nothing remains (unless the run was killed with SIGKILL;
# then `scripts/private-dockerd.sh stop <dir>` by hand, or `ip link del sai<N>`).
#
# Needs root (dockerd does). When dockerd is missing and apt-get exists, `start` installs
# Debian's docker.io first.
set -euo pipefail

usage="usage: $0 start|stop <dir>"
[[ $# -eq 2 && -n $2 ]] || { echo "$usage" >&2; exit 2; }
cmd=$1 dir=$2
say() { echo "private-dockerd: $*" >&2; }
die() { say "$*"; exit 1; }

install_hint="install Docker (Debian/Ubuntu: 'sudo apt-get install docker.io', or https://docs.docker.com/engine/install/) and run as root, or start Docker yourself"

ensure_installed() {
	command -v dockerd >/dev/null && command -v docker >/dev/null && return 0
	[[ $(id -u) == 0 ]] || die "dockerd is not installed and this is not root: $install_hint"
	command -v apt-get >/dev/null || die "dockerd is not installed and there is no apt-get: $install_hint"
	say "installing Debian's docker.io (apt-get)…"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -q docker.io >"$dir/apt.log" 2>&1 ||
		{ apt-get update -q >>"$dir/apt.log" 2>&1 && apt-get install -y -q docker.io >>"$dir/apt.log" 2>&1; } ||
		{ cat "$dir/apt.log" >&2; die "apt-get install docker.io failed: $install_hint"; }
	command -v dockerd >/dev/null || die "docker.io installed no dockerd: $install_hint"
}

start() {
	[[ $(id -u) == 0 ]] || die "starting a private dockerd needs root: $install_hint"
	mkdir -p "$dir"
	: >"$dir/.private-dockerd" # stop removes only a folder start made
	ensure_installed
	command -v ip >/dev/null || die "the 'ip' command (iproute2) is needed to create the daemon's bridge"
	# A bridge and subnet no one else on this machine uses: `ip link add` fails when the name is
	# taken (a parallel run), the route check when the subnet is.
	local n br="" i
	for ((i = 0; i < 64; i++)); do
		n=$((RANDOM % 250 + 2))
		[[ -z $(ip -4 route show match "10.213.$n.0/24" | grep -v '^default') ]] || continue
		ip link add "sai$n" type bridge 2>/dev/null || continue
		br=sai$n
		break
	done
	[[ -n $br ]] || die "found no free bridge name sai<N> / subnet 10.213.<N>.0/24"
	echo "$br" >"$dir/bridge"
	ip addr add "10.213.$n.1/24" dev "$br"
	ip link set "$br" up
	echo '{}' >"$dir/daemon.json" # not the machine's /etc/docker/daemon.json
	dockerd --config-file "$dir/daemon.json" --host "unix://$dir/docker.sock" --data-root "$dir/data" \
		--exec-root "$dir/exec" --pidfile "$dir/docker.pid" --bridge "$br" --iptables=false --ip-masq=false \
		--log-level warn >"$dir/dockerd.log" 2>&1 &
	local pid=$!
	echo "$pid" >"$dir/dockerd.process"
	for ((i = 0; i < 600; i++)); do
		DOCKER_HOST=unix://$dir/docker.sock docker version >/dev/null 2>&1 && {
			echo "DOCKER_HOST=unix://$dir/docker.sock"
			return 0
		}
		kill -0 "$pid" 2>/dev/null || { cat "$dir/dockerd.log" >&2; die "dockerd exited before it answered"; }
		sleep 0.1
	done
	cat "$dir/dockerd.log" >&2
	die "dockerd did not answer within 60 s"
}

stop() {
	[[ -d $dir ]] || return 0
	[[ -f $dir/.private-dockerd ]] || die "$dir was not made by '$0 start': not removing it"
	local pid i
	if [[ -f $dir/dockerd.process ]]; then
		pid=$(<"$dir/dockerd.process")
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 200; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		# dockerd's own containerd and any shim left: they live under our exec root.
		for pid in $(pgrep -f -- "$dir/exec" || true); do kill -KILL "$pid" 2>/dev/null || true; done
	fi
	# Mounts the daemon left (overlays, netns, the data root's own bind), deepest first.
	{ findmnt -rn -o TARGET | grep -F -- "$dir/" || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	[[ -f $dir/bridge ]] && ip link del "$(<"$dir/bridge")" 2>/dev/null || true
	rm -rf "$dir"
}

case $cmd in
start) start ;;
stop) stop ;;
*) echo "$usage" >&2; exit 2 ;;
esac
