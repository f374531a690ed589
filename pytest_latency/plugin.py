"""pytest11 entry point ``latency``: options, fixture, spec collection, reports. Wiring only."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency import hookspecs
from pytest_latency._options import add_options, read_options
from pytest_latency.baseline import BaselineError
from pytest_latency.fixtures import latency  # noqa: F401  (pytest finds fixtures on the plugin)
from pytest_latency.report.json_report import save_baseline, write_json
from pytest_latency.report.terminal import format_run
from pytest_latency.session import SESSION_KEY, LatencySession
from pytest_latency.yaml_items import SloFile, collect_file


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "latency: a latency test (pytest-latency)")
    options = read_options(config)
    try:
        session = LatencySession(
            options, on_run=lambda result: config.hook.pytest_latency_run_finished(result=result)
        )
    except BaselineError as error:
        raise pytest.UsageError(f"--latency-baseline: {error}") from None
    config.stash[SESSION_KEY] = session
    for flag, given in (
        ("--latency-html", options.html_path),
        ("--latency-record-content", options.record_content),
    ):
        if given:
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(
                    f"{flag} is part of the contract but not implemented in this version; "
                    "it has no effect"
                ),
                stacklevel=2,
            )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SloFile | None:
    return collect_file(file_path, parent)


def pytest_report_header(config: pytest.Config) -> str | None:
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        return None
    server = session.options.server
    where = server.url if server.kind == "url" else server.kind
    return f"latency: server={where} inconclusive={session.options.inconclusive}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    session = terminalreporter.config.stash.get(SESSION_KEY, None)
    if session is None or not session.runs:
        return
    terminalreporter.write_sep("=", "latency summary")
    for run in session.runs:
        for line in format_run(run):
            terminalreporter.write_line(line)
    if session.options.json_path is not None:
        terminalreporter.write_line(f"latency JSON: {session.options.json_path}")
    for line in session.saved_baseline:
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    latency_session = session.config.stash.get(SESSION_KEY, None)
    if latency_session is None:
        return
    if latency_session.options.json_path is not None:
        write_json(latency_session.options.json_path, latency_session.runs)
    options = latency_session.options
    if options.save_baseline is not None and latency_session.runs:
        latency_session.saved_baseline = save_baseline(
            options.save_baseline, latency_session.runs, options.baseline_history
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        session.close()
