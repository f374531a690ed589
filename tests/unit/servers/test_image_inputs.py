"""The images' inputs label: the hash scripts/container-images.sh always wrote, so images
built before are reused; the Dockerfiles found in a checkout; an installed wheel repacked."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from pytest_latency.servers import image_inputs
from pytest_latency.servers.image_inputs import Text, containers_dir, inputs_hash

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs coreutils' sha256sum")
def test_inputs_hash_is_the_shell_scripts(tmp_path):
    first, second = tmp_path / "Dockerfile", tmp_path / "write_model.py"
    first.write_text("FROM scratch\n")
    second.write_bytes(b"\x00binary\xff")
    strings = ["pytest-latency/base:bookworm", "8a99257e5e0ff3a5", "3.11"]
    # The hash the shell script computed (and labelled every image with) before this command.
    script = (
        'for item in "$@"; do if [ -f "$item" ]; then sha256sum "$item" | cut -d" " -f1; '
        'else echo "$item"; fi; done | sha256sum | cut -c1-16'
    )
    items = [*strings, str(first), str(second)]
    shell = subprocess.run(["bash", "-c", script, "hash", *items], capture_output=True, text=True)
    assert inputs_hash([*map(Text, strings), first, second]) == shell.stdout.strip()


def test_base_image_label_is_unchanged():
    # The label the base image has carried since it was first built: reused, not rebuilt.
    packages = "python3,python3-venv,cmake,g++,make,ca-certificates"
    assert inputs_hash([Text("bookworm"), Text(packages)]) == "8a99257e5e0ff3a5"


def test_a_checkout_reads_its_containers_folder():
    if image_inputs.PACKAGED_CONTAINERS.is_dir():
        pytest.skip("installed from a wheel: the packaged Dockerfiles are used")
    assert containers_dir() == ROOT / "containers"
    assert image_inputs.source_tree() == ROOT


def test_repacked_wheel_holds_the_installed_files(tmp_path, monkeypatch):
    # A fake installed distribution: two package files and a dist-info.
    site = tmp_path / "site"
    (site / "pytest_latency").mkdir(parents=True)
    (site / "pytest_latency" / "__init__.py").write_text("x = 1\n")
    (site / "pytest_latency" / "__pycache__").mkdir()
    (site / "pytest_latency" / "__pycache__" / "a.pyc").write_bytes(b"pyc")
    info = site / "pytest_latency-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-latency\nVersion: 9.9\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\n")
    for name in ("RECORD", "INSTALLER"):
        (info / name).write_text("stale\n")

    import importlib.metadata

    distribution = importlib.metadata.PathDistribution(info)
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: distribution)
    files = ["pytest_latency/__init__.py", "pytest_latency/__pycache__/a.pyc"]
    files += [
        f"pytest_latency-9.9.dist-info/{n}" for n in ("METADATA", "WHEEL", "RECORD", "INSTALLER")
    ]
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in files))
    wheel = image_inputs.repack_wheel(tmp_path / "out")
    assert wheel.name == "pytest_latency-9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert sorted(names) == [
            "pytest_latency-9.9.dist-info/METADATA",
            "pytest_latency-9.9.dist-info/RECORD",
            "pytest_latency-9.9.dist-info/WHEEL",
            "pytest_latency/__init__.py",
        ]
        record = archive.read("pytest_latency-9.9.dist-info/RECORD").decode()
    assert "pytest_latency/__init__.py,sha256=" in record and ",6\n" in record
