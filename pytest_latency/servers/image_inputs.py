"""What the project's container images are built from, and the hash their label carries.

An image carries the label ``pytest-latency.inputs``: a hash of everything it was built
from. ``pytest-latency images build`` rebuilds an image only when that hash changed.
The hash is the one ``scripts/container-images.sh`` always wrote (one line per input,
a file's sha256 or a string's text, sha256 of those lines, 16 hex digits), so images
built by either are reused by the other.

The Dockerfiles ship inside the package (``pytest_latency/_containers``, from the
repository's ``containers/``); an editable checkout reads ``containers/`` itself.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import io
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_latency.errors import ImageBuildError

LABEL = "pytest-latency.inputs"
DISTRIBUTION = "pytest-latency"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the installed pytest_latency folder
PACKAGED_CONTAINERS = PACKAGE_DIR / "_containers"


@dataclass(frozen=True, slots=True)
class Text:
    """An input that is a string (an image name, a version), not a file."""

    value: str


Input = Path | Text


def inputs_hash(items: Sequence[Input]) -> str:
    """The label value: per input a line (a file's sha256, or the text), hashed."""
    lines = []
    for item in items:
        if isinstance(item, Path):
            lines.append(hashlib.sha256(item.read_bytes()).hexdigest())
        else:
            lines.append(item.value)
    return hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()[:16]


def source_tree() -> Path | None:
    """The checkout the package runs from (editable install), if it does."""
    root = PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and (root / "containers").is_dir():
        return root
    return None


def containers_dir() -> Path:
    """The Dockerfiles: shipped in the package, or a checkout's ``containers/``."""
    if PACKAGED_CONTAINERS.is_dir():
        return PACKAGED_CONTAINERS
    tree = source_tree()
    if tree is not None:
        return tree / "containers"
    raise ImageBuildError(
        f"this pytest-latency installation has no Dockerfiles ({PACKAGED_CONTAINERS} is "
        "missing); reinstall it from a wheel or sdist of version 0.2 or later"
    )


def package_sources() -> list[Path]:
    """The package's Python files in ``find | sort`` order (LC_ALL=C), shipped
    Dockerfile helpers excluded: what the embedded server's image runs."""
    files = [path for path in PACKAGE_DIR.rglob("*.py") if PACKAGED_CONTAINERS not in path.parents]
    return sorted(files, key=lambda path: path.relative_to(PACKAGE_DIR).as_posix().encode())


def project_description() -> Path:
    """What names the package's version and dependencies: a checkout's pyproject.toml,
    else the installed distribution's METADATA."""
    tree = source_tree()
    if tree is not None:
        return tree / "pyproject.toml"
    metadata = importlib.metadata.distribution(DISTRIBUTION).locate_file(
        f"{_dist_info_name()}/METADATA"
    )
    return Path(str(metadata))


def _dist_info_name() -> str:
    distribution = importlib.metadata.distribution(DISTRIBUTION)
    name = distribution.metadata["Name"].replace("-", "_")
    return f"{name}-{distribution.version}.dist-info"


def repack_wheel(destination: Path) -> Path:
    """The installed distribution as the wheel it was installed from, in ``destination``.

    For an installation without its wheel or a checkout (``pip install pytest-latency``):
    the installed files of the package and its ``.dist-info`` (without the installer's
    own records), with a fresh RECORD.
    """
    distribution = importlib.metadata.distribution(DISTRIBUTION)
    dist_info = _dist_info_name()
    skipped = {f"{dist_info}/{name}" for name in ("RECORD", "INSTALLER", "REQUESTED")}
    skipped.add(f"{dist_info}/direct_url.json")
    members = sorted(
        path.as_posix()
        for path in distribution.files or []
        if path.parts[0] in ("pytest_latency", dist_info)
        and path.suffix != ".pyc"
        and path.as_posix() not in skipped
    )
    if not any(member.startswith("pytest_latency/") for member in members):
        raise ImageBuildError("the installed pytest-latency lists no package files to repack")
    wheel = destination / f"{dist_info.removesuffix('.dist-info')}-py3-none-any.whl"
    destination.mkdir(parents=True, exist_ok=True)
    record = io.StringIO()
    rows = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in members:
            data = Path(str(distribution.locate_file(member))).read_bytes()
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.writerow([member, f"sha256={digest.decode()}", len(data)])
        rows.writerow([f"{dist_info}/RECORD", "", ""])
        archive.writestr(f"{dist_info}/RECORD", record.getvalue())
    return wheel
