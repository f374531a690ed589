"""``pytest-latency images build [llamacpp|sim|vllm]``: the project's images, no registry.

    pytest-latency/base:bookworm    debootstrap'd Debian (python3, a C++ toolchain)
    pytest-latency/sim:TAG          the embedded reference server (this package)
    pytest-latency/llamacpp:TAG     llama.cpp's llama-server with a tiny random model
    pytest-latency/vllm:TAG         vLLM's engine on CPU with a tiny random Llama

Each image carries the label ``pytest-latency.inputs`` (image_inputs.py); an image whose
label matches is reused, so only the first build pays for llama.cpp (~5 minutes on two
cores). With a registry, skip debootstrap: ``--base-image python:3.11-slim`` runs the
servers and ``--build-image debian:bookworm`` builds llama.cpp. The repository's
``scripts/container-images.sh`` starts a Docker engine and runs this command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_latency.errors import ImageBuildError
from pytest_latency.servers.image_inputs import (
    LABEL,
    Text,
    containers_dir,
    inputs_hash,
    package_sources,
    project_description,
    repack_wheel,
    source_tree,
)

KINDS: tuple[str, ...] = ("sim", "llamacpp", "vllm")
BASE_IMAGE = "pytest-latency/base:bookworm"
BASE_PACKAGES = "python3,python3-venv,cmake,g++,make,ca-certificates"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
LLAMA_CPP_PYTHON = "0.3.36"
LLAMA_CPP_PYTHON_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
DEFAULT_TAG = "local"
GLIBC_MINOR = 36  # Debian bookworm's glibc 2.36: the newest manylinux wheels it runs
VLLM_PYTHON = "3.11"  # containers/vllm/requirements.txt pins cp311 wheels


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("LATENCY_CACHE_DIR") or Path(base) / "pytest-latency")


@dataclass(frozen=True, slots=True)
class BuildSettings:
    """Where and from what to build; defaults from the script's environment variables."""

    tag: str = DEFAULT_TAG
    base_image: str | None = field(default_factory=lambda: os.environ.get("LATENCY_BASE_IMAGE"))
    build_image: str | None = field(default_factory=lambda: os.environ.get("LATENCY_BUILD_IMAGE"))
    # Wheels go into images whose Python is Debian bookworm's 3.11 (or the base's).
    image_python: str = field(
        default_factory=lambda: os.environ.get("LATENCY_IMAGE_PYTHON", "3.11")
    )
    cache: Path = field(default_factory=default_cache)
    say: Callable[[str], None] = print

    def image(self, kind: str) -> str:
        return f"pytest-latency/{kind}:{self.tag}"


def _pip(settings: BuildSettings, *arguments: str) -> None:
    """pip, its noise kept in a log shown only if it fails."""
    log = settings.cache / "pip.log"
    with log.open("a") as output:
        done = subprocess.run(
            [sys.executable, "-m", "pip", *arguments, "--quiet"],
            stdout=output,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        raise ImageBuildError(f"pip {arguments[0]} failed; the end of {log}:\n{_tail(log, 20)}")


def _tail(path: Path, lines: int) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _target_wheels(settings: BuildSettings) -> list[str]:
    """pip download arguments for the wheels of the image's Python and this machine."""
    machine = os.uname().machine
    # pip takes the tags given literally (no older glibc implied): every manylinux tag up
    # to bookworm's glibc 2.36 (llguidance, for one, ships only manylinux_2_31).
    platforms = [f"manylinux{legacy}_{machine}" for legacy in ("1", "2010", "2014")]
    platforms += [f"manylinux_2_{glibc}_{machine}" for glibc in range(17, GLIBC_MINOR + 1)]
    arguments = ["--only-binary", ":all:", "--python-version", settings.image_python]
    arguments += ["--implementation", "cp"]
    for platform in platforms:
        arguments += ["--platform", platform]
    return arguments


class ImageBuilder:
    """Builds what is missing or stale on one Docker engine (``client``: docker SDK)."""

    def __init__(self, client: Any, settings: BuildSettings) -> None:
        self.client = client
        self.settings = settings
        settings.cache.mkdir(parents=True, exist_ok=True)

    def label(self, image: str) -> str:
        """The image's inputs label, "" when the image or its label is missing."""
        import docker.errors

        try:
            labels = self.client.images.get(image).labels or {}
        except docker.errors.ImageNotFound:
            return ""
        return str(labels.get(LABEL, ""))

    def build(self, image: str, context: Path, label: str, **arguments: str) -> None:
        """``docker build`` (the classic builder; host network: no bridge needed)."""
        self.settings.say(f"images: building {image}")
        log = self.settings.cache / f"build-{image.replace('/', '-').replace(':', '-')}.log"
        with log.open("w") as output:
            stream = self.client.api.build(
                path=str(context), tag=image, labels={LABEL: label}, buildargs=arguments,
                network_mode="host", rm=True, forcerm=True, decode=True,
            )  # fmt: skip
            for chunk in stream:
                output.write(str(chunk.get("stream", "")))
                if "error" in chunk:
                    output.write(str(chunk["error"]) + "\n")
                    output.flush()
                    raise ImageBuildError(
                        f"building {image} failed; the end of {log}:\n{_tail(log, 40)}"
                    )

    def base(self) -> tuple[str, str]:
        """The image the servers run on and the one llama.cpp builds in."""
        settings = self.settings
        if settings.base_image:
            return settings.base_image, settings.build_image or "debian:bookworm"
        label = inputs_hash([Text("bookworm"), Text(BASE_PACKAGES)])
        if self.label(BASE_IMAGE) != label:
            self._debootstrap(label)
        settings.say(f"images: {BASE_IMAGE} ready")
        return BASE_IMAGE, settings.build_image or BASE_IMAGE

    def _debootstrap(self, label: str) -> None:
        if shutil.which("debootstrap") is None:
            if os.geteuid() != 0 or shutil.which("apt-get") is None:
                raise ImageBuildError(
                    "building the base image needs debootstrap (as root); or pass "
                    "--base-image python:3.11-slim --build-image debian:bookworm "
                    "where a registry is reachable"
                )
            environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for command in (
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "debootstrap"],
            ):
                subprocess.run(command, check=True, capture_output=True, env=environment)
        log = self.settings.cache / "debootstrap.log"
        with tempfile.TemporaryDirectory(dir=self.settings.cache, prefix="rootfs.") as rootfs:
            self.settings.say(f"images: debootstrap bookworm ({BASE_PACKAGES})")
            with log.open("w") as output:
                done = subprocess.run(
                    ["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}",
                     "bookworm", rootfs, DEBIAN_MIRROR],
                    stdout=output, stderr=subprocess.STDOUT, check=False,
                )  # fmt: skip
            if done.returncode != 0:
                raise ImageBuildError(f"debootstrap failed; the end of {log}:\n{_tail(log, 20)}")
            self.import_folder(Path(rootfs), BASE_IMAGE, label)

    def import_folder(self, folder: Path, image: str, label: str) -> None:
        """``tar -C folder -c . | docker import``, streamed, with the inputs label."""
        repository, _, tag = image.rpartition(":")
        tar = subprocess.Popen(["tar", "-C", str(folder), "-c", "."], stdout=subprocess.PIPE)
        try:
            self.client.api.import_image_from_stream(
                tar.stdout, repository=repository, tag=tag, changes=[f"LABEL {LABEL}={label}"]
            )
        finally:
            if tar.stdout is not None:
                tar.stdout.close()
            if tar.wait() != 0:
                raise ImageBuildError(f"tar of {folder} failed (exit {tar.returncode})")

    def sim(self, base: str, work: Path) -> None:
        """The embedded server: this package's wheel and its dependencies in the context."""
        settings, image = self.settings, self.settings.image("sim")
        dockerfile = containers_dir() / "sim" / "Dockerfile"
        # Hash the sources, not the wheel: a wheel carries timestamps and never matches.
        label = inputs_hash(
            [Text(base), Text(self.label(base)), Text(settings.image_python), dockerfile,
             project_description(), *package_sources()]
        )  # fmt: skip
        if self.label(image) != label:
            context = work / "sim"
            wheels = context / "wheels"
            wheels.mkdir(parents=True)
            shutil.copy(dockerfile, context)
            tree = source_tree()
            if tree is not None:
                _pip(settings, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(tree))
            else:
                repack_wheel(wheels)
            ours = [str(path) for path in wheels.glob("*.whl")]
            _pip(settings, "download", *_target_wheels(settings), "--dest", str(wheels), *ours)
            self.build(image, context, label, BASE_IMAGE=base)
        settings.say(f"images: {image} ready")

    def llamacpp(self, base: str, build_image: str, work: Path) -> None:
        """llama.cpp: the llama-cpp-python sdist and the gguf wheels in the context."""
        settings, image = self.settings, self.settings.image("llamacpp")
        folder = containers_dir() / "llamacpp"
        label = inputs_hash(
            [Text(build_image), Text(base), Text(self.label(base)), Text(settings.image_python),
             folder / "Dockerfile", folder / "write_model.py", Text(LLAMA_CPP_PYTHON_SHA256)]
        )  # fmt: skip
        if self.label(image) != label:
            sdist = self._sdist()
            context = work / "llamacpp"
            (context / "wheels").mkdir(parents=True)
            for name in ("Dockerfile", "write_model.py"):
                shutil.copy(folder / name, context)
            shutil.copy(sdist, context)
            _pip(settings, "download", *_target_wheels(settings), "--dest",
                 str(context / "wheels"), "gguf")  # fmt: skip
            settings.say("images: the llama.cpp build takes ~5 minutes on two cores")
            self.build(image, context, label, BUILD_IMAGE=build_image, BASE_IMAGE=base,
                       JOBS=str(os.cpu_count() or 2))  # fmt: skip
        settings.say(f"images: {image} ready")

    def vllm(self, base: str, work: Path) -> None:
        """vLLM on CPU: the wheels requirements.txt pins (checked by sha256) in the context."""
        settings, image = self.settings, self.settings.image("vllm")
        folder = containers_dir() / "vllm"
        files = [folder / name for name in ("Dockerfile", "write_model.py", "requirements.txt")]
        label = inputs_hash([Text(base), Text(self.label(base)), *files])
        if self.label(image) != label:
            if settings.image_python != VLLM_PYTHON:
                raise ImageBuildError(
                    f"the vLLM image's wheels are pinned for Python {VLLM_PYTHON}; the base "
                    f"image has {settings.image_python}"
                )
            context = work / "vllm"
            context.mkdir(parents=True)
            for path in files:
                shutil.copy(path, context)
            self._vllm_wheels(folder / "requirements.txt", context / "wheels")
            settings.say("images: the vLLM image takes a few minutes (about 2 GB installed)")
            self.build(image, context, label, BASE_IMAGE=base)
        settings.say(f"images: {image} ready")

    def _vllm_wheels(self, requirements: Path, destination: Path) -> None:
        """The pinned wheels, downloaded once into the cache (pip checks every sha256),
        then linked into the build context."""
        cache = self.settings.cache / "wheels-vllm"
        self.settings.say("images: the vLLM wheels (about 750 MB, downloaded once)")
        _pip(self.settings, "download", *_target_wheels(self.settings), "--no-deps",
             "--require-hashes", "--dest", str(cache), "-r", str(requirements))  # fmt: skip
        destination.mkdir()
        for wheel in cache.glob("*.whl"):
            try:
                os.link(wheel, destination / wheel.name)
            except OSError:  # the context is on another file system
                shutil.copy(wheel, destination)

    def _sdist(self) -> Path:
        import hashlib

        sdist = self.settings.cache / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"

        def verified() -> bool:
            if not sdist.is_file():
                return False
            return hashlib.sha256(sdist.read_bytes()).hexdigest() == LLAMA_CPP_PYTHON_SHA256

        if not verified():
            self.settings.say(f"images: downloading the llama-cpp-python {LLAMA_CPP_PYTHON} sdist")
            _pip(self.settings, "download", "--no-deps", "--no-binary", ":all:", "--dest",
                 str(self.settings.cache), f"llama-cpp-python=={LLAMA_CPP_PYTHON}")  # fmt: skip
            if not verified():
                raise ImageBuildError(f"{sdist} does not have the expected sha256")
        return sdist


def build_images(kinds: Sequence[str], settings: BuildSettings, client: Any = None) -> None:
    """Build ``kinds`` (and the base image) where missing or stale; ImageBuildError if not."""
    if client is None:
        client = docker_client()
    builder = ImageBuilder(client, settings)
    base, build_image = builder.base()
    with tempfile.TemporaryDirectory(dir=settings.cache, prefix="context.") as work:
        if "sim" in kinds:
            builder.sim(base, Path(work))
        if "llamacpp" in kinds:
            builder.llamacpp(base, build_image, Path(work))
        if "vllm" in kinds:
            builder.vllm(base, Path(work))
    # Rebuilt images leave their predecessors dangling: remove ours (only dangling ones).
    client.images.prune(filters={"dangling": True, "label": LABEL})


def docker_client() -> Any:
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as error:
        raise ImageBuildError(
            f"no Docker engine answers ({type(error).__name__}: {error}); start one "
            "(any engine `docker info` reaches), then run this again"
        ) from None
    return client
