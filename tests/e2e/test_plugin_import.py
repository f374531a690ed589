"""The plugin costs nothing to a pytest run without latency tests: no heavy imports.

Only which modules load is asserted here; the time it takes is measured by
``benchmarks/bench_import.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_latency.analysis.health import DEFAULT_MAX_LAG_P99_S
from pytest_latency.plugin.options import DEFAULT_MAX_LAG_S

# Packages that cost tenths of a second each, and our modules that pull them in.
HEAVY = (
    "numpy", "scipy", "httpx", "opentelemetry", "google.protobuf", "yaml", "ray",
    "pytest_latency.analysis", "pytest_latency.driver", "pytest_latency.analysis.result",
    "pytest_latency.telemetry.receiver",
)  # fmt: skip
REPORT_HEAVY = f"""
import sys
def loaded_heavy():
    return sorted(n for n in sys.modules if any(n == p or n.startswith(p + ".") for p in {HEAVY!r}))
"""


@pytest.mark.slow
def test_importing_the_plugin_and_what_configure_loads_pulls_in_nothing_heavy() -> None:
    code = REPORT_HEAVY + (
        "import pytest_latency.plugin, pytest_latency.plugin.session, "
        "pytest_latency.plugin.fixtures, pytest_latency.plugin.yaml_items, "
        "pytest_latency.telemetry.hub\n"
        "print(loaded_heavy())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_plain_run_loads_nothing_heavy_and_the_fixture_is_still_there(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        REPORT_HEAVY
        + "def pytest_sessionfinish(session):\n    print('heavy modules:', loaded_heavy())\n"
    )
    pytester.makepyfile("def test_plain():\n    assert True\n")
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*heavy modules: []*"])
    listed = pytester.runpytest("--fixtures")
    listed.stdout.fnmatch_lines(["latency*", "*Drive open-loop traffic*"])


def test_the_max_lag_default_is_the_health_checks_own() -> None:
    assert DEFAULT_MAX_LAG_S == DEFAULT_MAX_LAG_P99_S
