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

echo "docker-engine: starting dockerd (log: $log_file)"
# No bridge and no iptables: these machines allow neither, so every container runs with
# host networking. setsid: the engine outlives this script and the test run.
setsid dockerd --bridge=none --iptables=false --ip6tables=false \
    >"$log_file" 2>&1 </dev/null &

for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
        echo "docker-engine: ready ($(docker info --format '{{.ServerVersion}}'))"
        exit 0
    fi
    sleep 1
done
echo "docker-engine: dockerd did not answer within 60 s; last lines of $log_file:" >&2
tail -n 30 "$log_file" >&2 || true
exit 1
