"""Every result says where it ran: the JSON's ``environment``, the HTML and Markdown headers."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from pytest_latency.report.environment_text import environment_line, gpu_text
from pytest_latency.report.html import report_runs
from pytest_latency.report.html.page import render_page
from pytest_latency.report.json_report import write_json
from pytest_latency.report.markdown import render_markdown
from pytest_latency.spec.model import Phase
from tests.helpers.html_runs import lesson_record, make_result
from tests.helpers.json_schema import assert_valid_run_file

PHASES = (Phase("steady", rate=5, duration_s=20),)


def versioned_result():  # type: ignore[no-untyped-def]
    result = make_result([lesson_record(0), lesson_record(1)], PHASES)
    server = dataclasses.replace(result.server, details={"version": "0.32.0", "build": "abc"})
    return dataclasses.replace(result, server=server)


def test_the_json_has_the_environment_with_the_contract_fields(tmp_path: Path) -> None:
    write_json(tmp_path / "run.json", [versioned_result()])
    (run,) = assert_valid_run_file(tmp_path / "run.json")["runs"]
    environment = run["environment"]
    assert environment["plugin_version"] == run["plugin_version"]
    assert environment["python"]
    assert environment["host"]["cpus"] == os.cpu_count()
    assert environment["server"]["version"] == "0.32.0"
    assert environment["server"]["build"] == "abc"
    assert environment["model"] == "tiny"


def test_a_server_that_says_nothing_has_a_null_version_in_the_json(tmp_path: Path) -> None:
    write_json(tmp_path / "run.json", [make_result([lesson_record()], PHASES)])
    (run,) = assert_valid_run_file(tmp_path / "run.json")["runs"]
    assert run["environment"]["server"]["version"] is None


def test_html_and_markdown_headers_name_the_environment() -> None:
    runs = report_runs([versioned_result()])
    line = environment_line(runs[0].section("environment"))
    assert line is not None
    assert "server url 0.32.0 build abc" in line and f"host {os.cpu_count()} CPUs" in line
    markdown = render_markdown(runs)
    assert markdown.index("Environment: ") < markdown.index("**Slowest requests**")
    assert "Environment:</strong>" in render_page(runs)


def test_gpus_are_counted_by_name() -> None:
    gpus = [{"name": "H100", "driver": "550"}] * 2 + [{"name": "A10", "driver": None}]
    assert gpu_text(gpus) == "2x H100 (driver 550), 1x A10"
    assert gpu_text([]) == "none"


def test_a_file_without_an_environment_gives_no_header_line() -> None:
    assert environment_line(None) is None


def test_service_classes_show_in_markdown_and_html_headers() -> None:
    from pytest_latency.spec.model import ServiceClass

    records = [lesson_record(0), lesson_record(1)]
    records[0].service_class, records[1].service_class = "premium", "batch"
    result = make_result(records, PHASES)
    classes = (ServiceClass("premium", 0.5, 0), ServiceClass("batch", 0.5, 10))
    result = dataclasses.replace(
        result, workload=dataclasses.replace(result.workload, classes=classes)
    )
    runs = report_runs([result])
    markdown = render_markdown(runs)
    assert "**Service classes:**" in markdown
    assert "- class premium (50%, priority 0): 1 offered, 1 completed, 0 failed" in markdown
    assert "class batch (50%, priority 10)" in render_page(runs)
