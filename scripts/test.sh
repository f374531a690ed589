#!/usr/bin/env bash
# Set up everything and run the whole test suite (also what CI runs through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[dev]'
.venv/bin/ruff check pytest_latency tests examples benchmarks
.venv/bin/mypy
.venv/bin/python -m pytest tests -q "$@"
