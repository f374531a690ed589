"""--latency-ray and --latency-ray-workers (and their ini twins) are checked before any
test runs; without Ray installed a run says how to get it. No cluster is needed here:
tests/e2e/ray_cluster drives a real one."""

from __future__ import annotations

import sys

import pytest

from pytest_latency.driver import Target, run_plan
from pytest_latency.plugin.options import parse_ray_address
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan


@pytest.mark.parametrize(
    "address", ["auto", "127.0.0.1:6379", "head.example:6379", "ray://127.0.0.1:10001"]
)
def test_good_addresses_are_kept(address: str) -> None:
    assert parse_ray_address(f" {address} ") == address


@pytest.mark.parametrize("address", ["", "127.0.0.1", "ray://", "host:0", "host:99999", ":1"])
def test_bad_addresses_are_refused(address: str) -> None:
    with pytest.raises(ValueError, match="expected auto, HOST:PORT"):
        parse_ray_address(address)


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--latency-ray", "nowhere"], "", "--latency-ray 'nowhere': expected auto, HOST:PORT"),
        ([], "latency_ray = nowhere", "--latency-ray 'nowhere': expected auto"),
        (["--latency-ray-workers", "2"], "", "--latency-ray-workers '2': needs --latency-ray"),
        (["--latency-ray", "auto", "--latency-ray-workers", "0"], "", "must be an integer >= 1"),
        (
            ["--latency-ray", "auto", "--latency-workers", "2"],
            "",
            "with --latency-ray the load comes from Ray actors",
        ),
    ],
)
def test_bad_ray_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_without_ray_a_run_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    plan = build_plan(Workload(phases=(Phase("steady", rate=1, duration_s=1),)))
    target = Target("http://127.0.0.1:9", model="m")  # never contacted
    with pytest.raises(RuntimeError, match=r"pip install 'pytest-latency\[ray\]'"):
        run_plan(plan, target, ray_address="auto")
