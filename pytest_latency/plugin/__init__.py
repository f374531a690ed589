"""pytest11 entry point ``latency``: options, fixture, spec collection, reports. Wiring only.

pytest imports this module in every run where the plugin is installed, so it imports
only pytest and the options table; the session, fixture, spec items and reports load
in the hooks that use them (``benchmarks/bench_import.py`` holds the cost down).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_latency.plugin.options import add_options, read_options

if TYPE_CHECKING:
    from collections.abc import Generator

    from pytest_latency.plugin.options import LatencyOptions
    from pytest_latency.plugin.session import LatencySession


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_latency.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    from pytest_latency.plugin import fixtures
    from pytest_latency.plugin.session import SESSION_KEY, LatencySession
    from pytest_latency.report.progress import TerminalProgress
    from pytest_latency.telemetry.hub import ReceiverUnavailable

    config.addinivalue_line("markers", "latency: a latency test (pytest-latency)")
    options = read_options(config)
    _check_output_paths(options)
    try:
        session = LatencySession(
            options,
            on_run=lambda result: config.hook.pytest_latency_run_finished(result=result),
            kind_hook=lambda name: config.hook.pytest_latency_server_kind(name=name),
            progress=TerminalProgress(config),
        )
    except ReceiverUnavailable as error:
        raise pytest.UsageError(f"--latency-otlp-receiver: {error}") from None
    except Exception as error:
        # The baseline module (scipy) loads only when --latency-baseline was given.
        from pytest_latency.analysis.baseline import BaselineError

        if isinstance(error, BaselineError):
            raise pytest.UsageError(f"--latency-baseline: {error}") from None
        raise
    config.stash[SESSION_KEY] = session
    from pytest_latency.plugin import interrupts

    # SIGTERM stops like Ctrl-C: the records are kept and the containers removed.
    handler = config.stash[interrupts.HANDLER_KEY] = interrupts.install()
    cleanup = interrupts.StopServersOnInterrupt(handler, session.stop_servers)
    config.pluginmanager.register(cleanup, "latency-interrupts")
    config.pluginmanager.register(fixtures, "latency-fixtures")  # the ``latency`` fixture


def _check_output_paths(options: LatencyOptions) -> None:
    """A report path that cannot be written is a usage error now, not after the load."""
    from pytest_latency.plugin.outputs import output_paths_problem

    problem = output_paths_problem(options)
    if problem:
        raise pytest.UsageError(problem)


def _latency_session(config: pytest.Config) -> LatencySession | None:
    from pytest_latency.plugin.session import SESSION_KEY

    return config.stash.get(SESSION_KEY, None)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    from pytest_latency.plugin.yaml_items import collect_file  # light; spec parsing loads per spec

    return collect_file(file_path, parent)


XDIST_MESSAGE = (
    "pytest-latency runs latency tests in one process: run them without -n "
    "(e.g. `pytest -p no:xdist` or a separate invocation), or deselect them with "
    "-m 'not latency'. Under pytest-xdist every worker would start its own server and "
    "offer overlapping load, and the workers' JSON reports would overwrite each other."
)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark tests that use the ``latency`` fixture, so ``-m 'not latency'`` selects them out."""
    if "latency" in getattr(item, "fixturenames", ()):
        item.add_marker("latency")


@pytest.hookimpl(trylast=True)  # after -m / -k deselection
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Refuse latency tests under pytest-xdist (``-n``): see :data:`XDIST_MESSAGE`.

    Only workers collect under xdist; a failed collection report reaches the controller,
    which prints it as a collection error and stops the session.
    """
    config = session.config
    under_xdist = hasattr(config, "workerinput") or bool(
        getattr(config.option, "numprocesses", None)
    )
    if (
        not under_xdist
        or config.option.collectonly
        or not any(item.get_closest_marker("latency") for item in items)
    ):
        return
    if not hasattr(config, "workerinput"):  # xdist collecting in this process
        raise pytest.UsageError(XDIST_MESSAGE)
    report = pytest.CollectReport("", "failed", XDIST_MESSAGE, [])
    config.hook.pytest_collectreport(report=report)
    items.clear()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    session = _latency_session(item.config)
    if session is not None and item.config.getoption("xmlpath", None):
        from pytest_latency.report.junit import RUNS_BEFORE

        item.stash[RUNS_BEFORE] = len(session.runs)


def pytest_report_header(config: pytest.Config) -> str | None:
    session = _latency_session(config)
    if session is None:
        return None
    server = session.options.server
    where = server.url if server.kind == "url" else server.kind
    return f"latency: server={where} inconclusive={session.options.inconclusive}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Verdicts into ``--junitxml`` (before the teardown report copies user_properties),
    each latency test's outcome (a run that decides no objective reports it), and a
    latency failure's first line (its failed objectives) as the short summary's."""
    session = _latency_session(item.config)
    if session is not None and call.when == "teardown" and item.config.getoption("xmlpath", None):
        from pytest_latency.report.junit import add_junit_properties

        add_junit_properties(item, session.runs)
    report = yield
    if session is not None and session.runs:
        from pytest_latency.plugin.run_ledger import phase_outcome

        session.note_outcome(item.nodeid, phase_outcome(report, call))
    if call.excinfo is not None and report.failed:
        _shorten(item, report, call.excinfo.value)
    return report


def _shorten(item: pytest.Item, report: pytest.TestReport, error: BaseException) -> None:
    from pytest_latency.errors import REPORTED_AS_TEXT  # imports nothing else

    if isinstance(error, REPORTED_AS_TEXT):
        from pytest_latency.plugin.gate import shorten_report
        from pytest_latency.plugin.yaml_items import SloItem

        shorten_report(report, error, spec_item=isinstance(item, SloItem))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    session = _latency_session(terminalreporter.config)
    if session is None or not (session.runs or session.output_lines):
        return
    from pytest_latency.report.terminal import format_summary
    from pytest_latency.report.wrapping import wrap
    from pytest_latency.shown_text import shown

    terminalreporter.write_sep("=", "latency summary")
    width = terminalreporter.config.get_terminal_writer().fullwidth
    for line in format_summary(session.runs, width) + [
        line for note in session.output_lines for line in wrap(note, width, hanging="  ")
    ]:
        terminalreporter.write_line(shown(line))  # lines quote servers: no escape reaches out


def pytest_sessionfinish(session: pytest.Session) -> None:
    latency_session = _latency_session(session.config)
    if latency_session is None:
        return
    from pytest_latency.plugin.outputs import write_session_files

    latency_session.output_lines, failed = write_session_files(latency_session)
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a report the user asked for is lost


def pytest_unconfigure(config: pytest.Config) -> None:
    session = _latency_session(config)
    if session is None:
        return
    from pytest_latency.plugin import interrupts

    handler = config.stash.get(interrupts.HANDLER_KEY, None)
    if handler is not None:
        interrupts.cleaning_up(handler)  # a second SIGTERM must not cut the removal short
    try:
        session.close()
    finally:
        if handler is not None:
            interrupts.restore(handler)
