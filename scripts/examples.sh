#!/usr/bin/env bash
# Set up everything and run the example SLO suite against the embedded server, with reports
# (the JSON of every run and the HTML report beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
mkdir -p reports
.venv/bin/python -m pytest examples -v --latency-json reports/latency.json \
    --latency-html reports/latency.html "$@"
echo "JSON report: reports/latency.json"
echo "HTML report: reports/latency.html"
