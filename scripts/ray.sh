#!/usr/bin/env bash
# Ray (the [ray] extra) and iproute2 for the Ray cluster tests (tests/e2e/ray_cluster),
# which run a two-node cluster inside a loopback-only network namespace (unshare -n, ip).
# Under CI=true both must be there, so a failed install stops the job; as root elsewhere
# they are installed if missing; otherwise nothing is installed and the Ray tests skip.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() {
    if [ "${CI:-}" = "true" ]; then
        echo "ray.sh: $1, which CI needs for the Ray cluster tests" >&2
        exit 1
    fi
    echo "ray.sh: $1; the Ray cluster tests will skip" >&2
    exit 0
}
if [ "${CI:-}" != "true" ] && [ "$(id -u)" != "0" ]; then
    echo "ray.sh: not root (the Ray tests need unshare -n); the Ray cluster tests will skip" >&2
    exit 0
fi
if ! .venv/bin/python -c "import ray" >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet -e '.[dev,ray]' || fail "could not install Ray"
fi
if ! command -v ip >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends iproute2 >/dev/null; } \
        || fail "could not install iproute2"
fi
command -v unshare >/dev/null 2>&1 || fail "no unshare (util-linux)"
