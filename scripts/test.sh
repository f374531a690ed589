#!/usr/bin/env bash
# Set up everything and run the whole test suite (also what CI runs through .ci/run).
#
# On two cores the longest step is the image build (llama.cpp ~5-10 min, vLLM on CPU
# ~2.5-4 min, once), so it runs in the background while ruff, mypy and the tests that
# need no container run beside it, those with pytest-xdist (LATENCY_TEST_WORKERS
# processes, default 2). The tests that must run alone come after the build, one at a
# time: `serial` ones (they measure wall-clock time or the load generator's schedule),
# containers, Ray and the browser. The tiers and their budgets are in
# docs/architecture.md ("Tests").
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
# Debian packages and the [ray] extra before the image build: apt serves one caller at a
# time, and the build uses apt (debootstrap) and this venv's Python.
# The HTML report's browser tests drive Debian's Chromium (installed here under CI=true).
bash scripts/browser.sh
# The Ray cluster tests need Ray (the [ray] extra) and iproute2 (installed here under CI=true).
bash scripts/ray.sh

# The container tests need a Docker engine and the project's images (llama.cpp and
# vLLM build once, then are reused). Under CI=true they must run, so a failed build
# fails the job; elsewhere they skip and say how to enable them.
build_log="$(mktemp)"
LATENCY_BUILD_PYTHON=.venv/bin/python bash scripts/container-images.sh >"$build_log" 2>&1 &
build_pid=$!
trap 'kill "$build_pid" 2>/dev/null || true; rm -f "$build_log"' EXIT

status=0
.venv/bin/ruff check pytest_latency tests examples benchmarks containers || status=1
.venv/bin/mypy || status=1
alone="serial or container or ray or browser"
.venv/bin/python -m pytest tests -q -n "${LATENCY_TEST_WORKERS:-2}" -m "not ($alone)" "$@" \
    || status=1

if wait "$build_pid"; then
    cat "$build_log"
else
    cat "$build_log" >&2
    if [ "${CI:-}" = "true" ]; then
        echo "test.sh: the container images did not build (log above); CI needs them" >&2
        exit 1
    fi
    echo "test.sh: no container images; the container tests will skip" >&2
fi
trap - EXIT
rm -f "$build_log"

.venv/bin/python -m pytest tests -q -m "$alone" "$@" || status=1
exit "$status"
