"""A conftest.py adds a server kind through ``pytest_latency_server_kind`` (no Docker).

The conftest's kind builds a container that is never started: ``run_container`` is
replaced by one that prints the ContainerSpec it got and refuses, so each test sees
exactly what the session would start. Runs in a subprocess: the conftest patches a
module of the plugin.
"""

from __future__ import annotations

import pytest

CONFTEST = """
from contextlib import contextmanager

from pytest_latency.servers import ServerStartError, profiles
from pytest_latency.servers.container import ContainerSpec, Listen
from pytest_latency.servers.kinds import ServerKind


def my_container(spec):
    flags = (f"--{name}={value}" for name, value in sorted(spec.options.items()))
    return ContainerSpec(
        kind=spec.kind, image="example/mykind:1", command=("serve", *flags),
        listen=Listen("127.0.0.1", 9), served_model=spec.model or "mine",
    )


@contextmanager
def never_started(container_spec):
    print("WOULD START", container_spec.kind, container_spec.image, *container_spec.command)
    raise ServerStartError("fake container not started")
    yield


profiles.run_container = never_started


def pytest_latency_server_kind(name):
    if name == "mykind":
        return ServerKind("mykind", my_container, frozenset({"batch"}), exports_spans=True)
    return None
"""

SESSION_TEST = """
import pytest
from pytest_latency.servers import ServerStartError
from pytest_latency.plugin.session import SESSION_KEY

def test_the_flag_resolves_to_the_conftest_kind(request):
    session = request.config.stash[SESSION_KEY]
    assert session.options.server.kind == "mykind"
    assert session.kind("mykind").options == frozenset({"batch"})
    with pytest.raises(ServerStartError, match="fake container not started"):
        session.server()
"""

YAML_SPEC = """\
server: {kind: %s, options: {batch: 2}}
workload:
  seed: 1
  input_tokens: 10
  output_tokens: 4
  phases: [{name: steady, arrival: constant, rate: 10, duration: 1s}]
objectives:
  - {metric: error_rate, max: 50%%}
"""


@pytest.mark.slow
def test_latency_server_names_a_kind_a_conftest_adds(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SESSION_TEST)
    result = pytester.runpytest_subprocess(
        "--latency-server", "mykind", "-s", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*WOULD START mykind example/mykind:1 serve --otlp_traces_endpoint=http://127.0.0.1:*"]
    )
    result.stdout.fnmatch_lines(["*latency: server=mykind*"])


@pytest.mark.slow
def test_a_spec_file_names_a_kind_a_conftest_adds(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".slo.yaml", mine=YAML_SPEC % "mykind")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["*WOULD START mykind example/mykind:1 serve --batch=2 --otlp_traces_endpoint=*"]
    )
    result.stdout.fnmatch_lines(["*fake container not started*"])
    assert result.ret != 0


@pytest.mark.slow
def test_an_unknown_kind_is_a_usage_error_naming_the_hook(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--latency-server", "nokind")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--latency-server 'nokind': unknown server kind 'nokind'*pytest_latency_server_kind*"]
    )


@pytest.mark.slow
def test_an_unknown_kind_in_a_spec_file_fails_its_test_clearly(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".slo.yaml", typo=YAML_SPEC % "vlm")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*unknown server kind 'vlm'*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
