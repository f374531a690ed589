#!/usr/bin/env bash
# Build the project's container images without any image registry:
#   pytest-latency/base:bookworm    debootstrap'd Debian (python3, a C++ toolchain)
#   pytest-latency/sim:local        the embedded reference server
#   pytest-latency/llamacpp:local   llama.cpp's llama-server with a tiny random model
# Each image carries a label with the hash of what went into it; an image whose label
# matches is reused, so only the first run pays for the llama.cpp build (~5 min on
# two cores). Users with a registry can skip debootstrap: LATENCY_BASE_IMAGE=python:3.11-slim
# (runs the servers) and LATENCY_BUILD_IMAGE=debian:bookworm (builds llama.cpp).
set -euo pipefail
export LC_ALL=C  # file lists sort the same everywhere, so input hashes do too
cd "$(dirname "$0")/.."
repo="$PWD"

bash scripts/docker-engine.sh

cache="${LATENCY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pytest-latency}"
llama_cpp_python_version="0.3.36"
llama_cpp_python_sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
base_packages="python3,python3-venv,cmake,g++,make,ca-certificates"
python="${LATENCY_BUILD_PYTHON:-python3}"
# Wheels go into images whose Python is Debian bookworm's 3.11 (or the given base
# image's: LATENCY_IMAGE_PYTHON=3.12), whatever Python runs this script.
image_python="${LATENCY_IMAGE_PYTHON:-3.11}"
target_wheels=(--only-binary :all: --python-version "$image_python" --implementation cp
    --platform "manylinux2014_$(uname -m)" --platform "manylinux_2_28_$(uname -m)"
    --platform "manylinux_2_34_$(uname -m)")
mkdir -p "$cache"

pip_quiet() {  # pip, its noise kept in a log that is shown only if it fails
    "$python" -m pip "$@" --quiet >>"$cache/pip.log" 2>&1 \
        || { echo "container-images: pip $1 failed; the end of $cache/pip.log:" >&2; tail -n 20 "$cache/pip.log" >&2; exit 1; }
}

image_hash() {  # the label an image was built from, or nothing
    docker image inspect --format '{{ index .Config.Labels "pytest-latency.inputs" }}' "$1" 2>/dev/null || true
}

inputs_hash() {  # hash of the given files and strings: what an image is built from
    for item in "$@"; do
        if [ -f "$item" ]; then sha256sum "$item" | cut -d' ' -f1; else echo "$item"; fi
    done | sha256sum | cut -c1-16
}

build() {  # build TAG CONTEXT HASH [--build-arg ...]
    local tag="$1" context="$2" hash="$3"
    shift 3
    echo "container-images: building $tag"
    # The legacy builder: Debian's engine has no buildx. Host network only: these
    # machines have no bridge (and the builds need no network anyway).
    local log="$cache/build-${tag//[\/:]/-}.log"
    DOCKER_BUILDKIT=0 docker build --network host --label "pytest-latency.inputs=$hash" \
        --tag "$tag" "$@" "$context" >"$log" 2>&1 \
        || { echo "container-images: building $tag failed; the end of $log:" >&2; tail -n 40 "$log" >&2; exit 1; }
}

# 1. The base image: debootstrap into a folder, docker import.
base_image="${LATENCY_BASE_IMAGE:-}"
build_image="${LATENCY_BUILD_IMAGE:-}"
if [ -z "$base_image" ]; then
    base_image="pytest-latency/base:bookworm"
    build_image="${build_image:-$base_image}"
    hash="$(inputs_hash bookworm "$base_packages")"
    if [ "$(image_hash "$base_image")" != "$hash" ]; then
        if ! command -v debootstrap >/dev/null; then
            [ "$(id -u)" = 0 ] || { echo "container-images: debootstrap is missing and this user is not root" >&2; exit 1; }
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
        fi
        rootfs="$(mktemp -d "$cache/rootfs.XXXXXX")"
        trap 'rm -rf "$rootfs"' EXIT
        echo "container-images: debootstrap bookworm ($base_packages)"
        debootstrap --variant=minbase --include="$base_packages" bookworm "$rootfs" \
            http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 \
            || { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
        tar -C "$rootfs" -c . | docker import --change "LABEL pytest-latency.inputs=$hash" - "$base_image" >/dev/null
        rm -rf "$rootfs"
        trap - EXIT
    fi
    echo "container-images: $base_image ready"
fi
build_image="${build_image:-debian:bookworm}"

work="$(mktemp -d "$cache/context.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# 2. The embedded server: the project's wheel and its dependencies in the context.
# Hash the sources, not the wheels: wheels carry timestamps and would never match.
hash="$(inputs_hash "$base_image" "$(image_hash "$base_image")" "$image_python" containers/sim/Dockerfile \
    pyproject.toml $(find pytest_latency -name '*.py' | sort))"
if [ "$(image_hash pytest-latency/sim:local)" != "$hash" ]; then
    mkdir -p "$work/sim/wheels"
    cp containers/sim/Dockerfile "$work/sim/"
    pip_quiet wheel --no-deps --wheel-dir "$work/sim/wheels" "$repo"
    pip_quiet download "${target_wheels[@]}" --dest "$work/sim/wheels" "$work"/sim/wheels/*.whl
    build pytest-latency/sim:local "$work/sim" "$hash" --build-arg "BASE_IMAGE=$base_image"
fi
echo "container-images: pytest-latency/sim:local ready"

# 3. llama.cpp: the llama-cpp-python sdist and the gguf wheels in the context.
sdist="$cache/llama_cpp_python-$llama_cpp_python_version.tar.gz"
if ! echo "$llama_cpp_python_sha256  $sdist" | sha256sum --check --status 2>/dev/null; then
    echo "container-images: downloading the llama-cpp-python $llama_cpp_python_version sdist"
    pip_quiet download --no-deps --no-binary :all: --dest "$cache" \
        "llama-cpp-python==$llama_cpp_python_version"
    echo "$llama_cpp_python_sha256  $sdist" | sha256sum --check --status \
        || { echo "container-images: $sdist does not have the expected sha256" >&2; exit 1; }
fi
hash="$(inputs_hash "$build_image" "$base_image" "$(image_hash "$base_image")" "$image_python" \
    containers/llamacpp/Dockerfile containers/llamacpp/write_model.py "$llama_cpp_python_sha256")"
if [ "$(image_hash pytest-latency/llamacpp:local)" != "$hash" ]; then
    mkdir -p "$work/llamacpp/wheels"
    cp containers/llamacpp/Dockerfile containers/llamacpp/write_model.py "$work/llamacpp/"
    ln "$sdist" "$work/llamacpp/" 2>/dev/null || cp "$sdist" "$work/llamacpp/"
    pip_quiet download "${target_wheels[@]}" --dest "$work/llamacpp/wheels" gguf
    echo "container-images: the llama.cpp build takes ~5 minutes on two cores"
    build pytest-latency/llamacpp:local "$work/llamacpp" "$hash" \
        --build-arg "BUILD_IMAGE=$build_image" --build-arg "BASE_IMAGE=$base_image" \
        --build-arg "JOBS=$(nproc)"
fi
echo "container-images: pytest-latency/llamacpp:local ready"

# Rebuilt images leave their predecessors dangling: remove ours (only dangling ones).
docker image prune --force --filter "label=pytest-latency.inputs" >/dev/null
