#!/usr/bin/env bash
# Make a Docker engine answer on this machine, as DESIGN.md section 7 says: Debian's
# docker.io, started with no bridge and no iptables (these machines allow neither), so
# containers run with host networking. Idempotent: an engine that already answers is
# left alone. Without root and without an engine it explains and exits 1.
set -euo pipefail

log_file="${LATENCY_DOCKERD_LOG:-/var/log/pytest-latency-dockerd.log}"

if docker info >/dev/null 2>&1; then
    echo "docker-engine: an engine already answers ($(docker info --format '{{.ServerVersion}}' 2>/dev/null))"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    cat >&2 <<'EOF'
docker-engine: no Docker engine answers and this user is not root, so it cannot be
installed or started here. Start one yourself (any engine that `docker info` reaches),
then run this again. Container tests skip outside CI until an engine answers.
EOF
    exit 1
fi

# A systemd machine whose engine is merely stopped: start that one, configured as it is
# (never a second dockerd beside it). Without systemd (these VMs) there is none to start.
if [ -d /run/systemd/system ] && systemctl cat docker.service >/dev/null 2>&1; then
    if systemctl start docker && docker info >/dev/null 2>&1; then
        echo "docker-engine: started the machine's own engine (systemctl start docker)"
        exit 0
    fi
    echo "docker-engine: systemctl start docker did not give an engine; see journalctl -u docker" >&2
    exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || {
        echo "docker-engine: no Docker engine and no apt-get to install one; install Docker, then run this again" >&2
        exit 1
    }
    echo "docker-engine: installing Debian's docker.io"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io >/dev/null
fi

# An engine killed without a shutdown (a session that ended) leaves its pid file, and
# dockerd refuses to start beside it; remove it when no dockerd owns it any more.
engine_running() {  # the pid in file $1 is a live (not zombie) dockerd or containerd
    local pid
    pid="$(cat "$1" 2>/dev/null)" || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/status" ] || return 1
    grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" && return 1
    grep -qxE 'dockerd|containerd' "/proc/$pid/comm"
}
for pid_file in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
    if [ -f "$pid_file" ] && ! engine_running "$pid_file"; then
        rm -f "$pid_file"
    fi
done

echo "docker-engine: starting dockerd (log: $log_file)"
# No bridge and no iptables: these machines allow neither, so every container runs with
# host networking. setsid: the engine outlives this script and the test run.
setsid dockerd --bridge=none --iptables=false --ip6tables=false \
    >"$log_file" 2>&1 </dev/null &

dockerd_pid=$!
for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
        echo "docker-engine: ready ($(docker info --format '{{.ServerVersion}}'))"
        exit 0
    fi
    kill -0 "$dockerd_pid" 2>/dev/null || break  # it exited: no point waiting
    sleep 1
done
echo "docker-engine: dockerd did not answer; last lines of $log_file:" >&2
tail -n 30 "$log_file" >&2 || true
exit 1
