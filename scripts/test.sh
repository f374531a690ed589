#!/usr/bin/env bash
# Set up everything and run the whole test suite (also what CI runs through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
.venv/bin/ruff check pytest_latency tests examples benchmarks containers
.venv/bin/mypy
# The container tests need a Docker engine and the project's images (the llama.cpp
# image builds once, ~5 min on two cores, then is reused). Under CI=true they must
# run, so a failure here stops the job; elsewhere they skip and say how to enable them.
if [ "${CI:-}" = "true" ]; then
    LATENCY_BUILD_PYTHON=.venv/bin/python bash scripts/container-images.sh
elif ! LATENCY_BUILD_PYTHON=.venv/bin/python bash scripts/container-images.sh; then
    echo "test.sh: no container images; the container tests will skip" >&2
fi
# The HTML report's browser tests drive Debian's Chromium (installed here under CI=true).
bash scripts/browser.sh
# The Ray cluster tests need Ray (the [ray] extra) and iproute2 (installed here under CI=true).
bash scripts/ray.sh
.venv/bin/python -m pytest tests -q "$@"
