"""``pytest-latency images build`` from an installed wheel: the wheel ships the
Dockerfiles, the command builds the embedded server's image in a fresh venv, and a
second run reuses it (same inputs label)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
SHIPPED = (
    "pytest_latency/_containers/sim/Dockerfile",
    "pytest_latency/_containers/llamacpp/Dockerfile",
    "pytest_latency/_containers/llamacpp/write_model.py",
    "pytest_latency/_containers/vllm/Dockerfile",
    "pytest_latency/_containers/vllm/write_model.py",
    "pytest_latency/_containers/vllm/requirements.txt",
)


def _run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **options)
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(out), "-q"])
    (built,) = out.glob("pytest_latency-*.whl")
    return built


def test_the_wheel_ships_the_dockerfiles(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert set(SHIPPED) <= names
        for name in SHIPPED:
            source = ROOT / "containers" / name.removeprefix("pytest_latency/_containers/")
            assert archive.read(name) == source.read_bytes()


def test_images_build_sim_from_a_pip_install_then_reuses_it(
    wheel: Path, tmp_path: Path, docker_client: Any
) -> None:
    # The base image is built once per machine (debootstrap, minutes); not here.
    require_image(docker_client, "pytest-latency/base:bookworm")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    tag = f"test-{uuid.uuid4().hex[:8]}"  # never the shared :local images
    image = f"pytest-latency/sim:{tag}"
    command = [str(venv / "bin" / "pytest-latency"), "images", "build", "sim", "--tag", tag]
    environment = {**os.environ, "LATENCY_CACHE_DIR": str(tmp_path / "cache")}
    try:
        first = _run(command, cwd=tmp_path, env=environment)  # not in a checkout
        assert f"images: building {image}" in first.stdout
        built = docker_client.images.get(image)
        assert len(built.labels["pytest-latency.inputs"]) == 16
        second = _run(command, cwd=tmp_path, env=environment)
        assert "building" not in second.stdout and f"images: {image} ready" in second.stdout
        assert docker_client.images.get(image).id == built.id
        served = docker_client.containers.run(
            image, ["--help"], network_mode="host", remove=True, stdout=True
        )
        assert b"python -m pytest_latency.sim" in served
    finally:
        with contextlib.suppress(Exception):  # never built: nothing to remove
            docker_client.images.remove(image, force=True)


def test_import_folder_streams_a_root_filesystem_with_its_label(
    tmp_path: Path, docker_client: Any
) -> None:
    # The base image's last step (after debootstrap), on a tiny folder.
    from pytest_latency.servers.images import BuildSettings, ImageBuilder

    (tmp_path / "rootfs" / "etc").mkdir(parents=True)
    (tmp_path / "rootfs" / "etc" / "hello").write_text("from the folder\n")
    image = f"pytest-latency/import-test:{uuid.uuid4().hex[:8]}"
    builder = ImageBuilder(docker_client, BuildSettings(cache=tmp_path / "cache"))
    try:
        builder.import_folder(tmp_path / "rootfs", image, "0123456789abcdef")
        assert builder.label(image) == "0123456789abcdef"
        exported = b"".join(docker_client.images.get(image).save())
        assert b"from the folder" in exported
    finally:
        with contextlib.suppress(Exception):
            docker_client.images.remove(image, force=True)


def test_the_vllm_image_is_reused_while_its_inputs_are_unchanged(docker_client: Any) -> None:
    # Built by scripts/container-images.sh from this checkout: the same inputs label, so
    # the command downloads and builds nothing (it would take minutes).
    require_image(docker_client, "pytest-latency/vllm:local")
    image = docker_client.images.get("pytest-latency/vllm:local")
    done = _run([sys.executable, "-m", "pytest_latency", "images", "build", "vllm"], cwd=ROOT)
    assert "building" not in done.stdout and "wheels" not in done.stdout
    assert "images: pytest-latency/vllm:local ready" in done.stdout
    assert docker_client.images.get("pytest-latency/vllm:local").id == image.id
    assert image.labels["pytest-latency.inputs"] and image.attrs["Size"] < 3_500_000_000
