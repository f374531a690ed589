"""``pytest-latency images build [llamacpp|sim|vllm]``: the wiring over servers/images.py.

Apart from cli.py, whose commands work on saved runs: this one builds container images.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from pytest_latency.errors import ImageBuildError
from pytest_latency.servers.images import DEFAULT_TAG, KINDS, BuildSettings, build_images

EXIT_OK, EXIT_FAILED = 0, 1


def _kind(text: str) -> str:
    if text not in KINDS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {' or '.join(KINDS)}")
    return text


def build_command(arguments: argparse.Namespace) -> int:
    """Build the named kinds (all without names); 1 with the reason when a build fails."""
    overrides = {
        name: getattr(arguments, name)
        for name in ("base_image", "build_image", "image_python")
        if getattr(arguments, name)
    }
    settings = dataclasses.replace(BuildSettings(tag=arguments.tag), **overrides)
    try:
        build_images(arguments.kinds or KINDS, settings)
    except ImageBuildError as error:
        print(f"pytest-latency images: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def add_images(commands: Any) -> None:
    images = commands.add_parser(
        "images",
        help="build the project's container images (llama.cpp, vLLM on CPU, the embedded server)",
        description="Container images for the llamacpp, vllm (CPU) and sim server kinds.",
    )
    actions = images.add_subparsers(dest="action", required=True)
    build = actions.add_parser(
        "build",
        help="build the images that are missing or stale (all when none is named)",
        description="Build pytest-latency/KIND:TAG from this installation, reusing an image "
        "whose inputs label matches. Needs a Docker engine; the base image is built with "
        "debootstrap (root) unless --base-image is given. Exit 0: ready; 1: a build failed; "
        "2: usage error.",
    )
    build.add_argument(
        "kinds", nargs="*", type=_kind, metavar="KIND", help=f"{', '.join(KINDS)} (default: all)"
    )
    build.add_argument("--tag", default=DEFAULT_TAG, help=f"image tag (default: {DEFAULT_TAG})")
    build.add_argument(
        "--base-image",
        metavar="IMAGE",
        help="run the servers on IMAGE (e.g. python:3.11-slim) instead of a debootstrap "
        "base (default: $LATENCY_BASE_IMAGE)",
    )
    build.add_argument(
        "--build-image",
        metavar="IMAGE",
        help="build llama.cpp in IMAGE (default: $LATENCY_BUILD_IMAGE, else the base "
        "image, else debian:bookworm)",
    )
    build.add_argument(
        "--image-python",
        metavar="X.Y",
        help="the Python version of the base image (default: $LATENCY_IMAGE_PYTHON or 3.11)",
    )
