"""Collection of ``*.slo.yaml`` files: one test per file, run against the session's server.

pytest asks :func:`collect_file` about every file it collects, with or without spec
files, so the YAML parser and the verdict code (scipy) load with the first spec file.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_latency.errors import LatencyRunInvalid
from pytest_latency.plugin.session import SESSION_KEY, LatencySession
from pytest_latency.servers import ServerStartError
from pytest_latency.spec.model import SpecError

if TYPE_CHECKING:
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.plugin.gate import Locate
    from pytest_latency.spec.model import Objective
    from pytest_latency.spec.slo_yaml import SloSpec

SUFFIX = ".slo.yaml"


class SloFile(pytest.File):
    """A spec file; errors in it are collection errors naming file, line and key."""

    def collect(self) -> list[SloItem]:
        from pytest_latency.spec.slo_yaml import load_slo_file

        try:
            spec = load_slo_file(self.path)
        except SpecError as error:
            raise self.CollectError(str(error)) from None
        name = self.path.name.removesuffix(SUFFIX)
        return [SloItem.from_parent(self, name=name, spec=spec)]


class SloItem(pytest.Item):
    def __init__(self, *, spec: SloSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("latency")  # so -m 'not latency' deselects spec files too
        self.spec = spec
        self._add_file_markers()
        self.result: LatencyResult | None = None

    def _add_file_markers(self) -> None:
        """The file's ``markers:``, for -m like any test's marks. An unregistered one is
        reported at its line in the file (pytest's own warning would point into pytest):
        an error under ``--strict-markers``, else a PytestUnknownMarkWarning there."""
        registered = {
            line.split(":", 1)[0].split("(", 1)[0].strip() for line in self.config.getini("markers")
        }
        strict = _strict_markers(self.config)
        lines = self.spec.marker_lines or (1,) * len(self.spec.markers)
        for index, (name, line) in enumerate(zip(self.spec.markers, lines, strict=False)):
            if name not in registered:
                where = f"{self.path}:{line}: markers[{index}]"
                if strict:
                    pytest.fail(
                        f"{where}: {name!r} not found in `markers` configuration option",
                        pytrace=False,
                    )
                warnings.warn_explicit(
                    pytest.PytestUnknownMarkWarning(
                        f"unknown marker {name!r} in {self.path.name}: register it in your"
                        " pytest configuration (markers = ...) to avoid this warning"
                    ),
                    pytest.PytestUnknownMarkWarning,
                    str(self.path),
                    line,
                )
            with warnings.catch_warnings():  # reported above, at the file's line
                warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
                self.add_marker(name)

    def setup(self) -> None:
        # The run happens in setup, so a run that cannot be trusted (server down, generator
        # behind) is reported as an error, and only a decided objective as a failure.
        from pytest_latency.keys import key_for_test, project_root
        from pytest_latency.plugin.gate import check_valid, terminal_width

        session = self.config.stash[SESSION_KEY]
        root = project_root(self.path, self.config.inipath, self.config.rootpath)
        key = key_for_test(root, self.path, self.nodeid, self.spec.id)
        problem = None
        try:
            # Before any server starts or any request is sent: can the plan decide at
            # all, and is there a baseline for its relative objectives?
            if self.spec.capacity is None:  # a search plans its probes itself
                session.check_plan(
                    self.spec.workload,
                    self.spec.objectives,
                    test=self.nodeid,
                    locate=self._locate(),
                )
            relative = [goal for goal in self.spec.objectives if goal.relative]
            baseline_problem = (
                session.baseline_problem(session.next_key(key, self.nodeid)) if relative else None
            )
            if baseline_problem:
                raise SpecError(f"{relative[0].label}: {baseline_problem}")
            self.result = self._run(session, key)
            # An invalid run's objectives are decided (invalid, with the reason) before the
            # error, so the reports name them.
            check_valid(self.result, terminal_width(self.config), self._decided())
        except (ServerStartError, SpecError, LatencyRunInvalid) as error:
            problem = str(error)
        if problem is not None:  # the message is the report: the plugin's frames hide it
            pytest.fail(problem, pytrace=False)

    def _run(self, session: LatencySession, key: str) -> LatencyResult:
        """The file's workload, or its capacity search (each probe decides the others)."""
        spec = self.spec
        if spec.capacity is None:
            return session.run(
                spec.workload,
                test=self.nodeid,
                server=spec.server,
                key=key,
                objectives=spec.objectives,
            )
        from pytest_latency.spec.capacity import split_objectives

        criteria, _ = split_objectives(spec.objectives)
        return session.run_capacity(
            spec.workload, spec.capacity, criteria, test=self.nodeid, server=spec.server, key=key
        )

    def runtest(self) -> None:
        from pytest_latency.plugin.gate import enforce, terminal_width

        assert self.result is not None  # set by setup
        enforce(
            self.result,
            self.result.evaluate(self._decided()),
            width=terminal_width(self.config),
            locate=self._locate(),
        )

    def _decided(self) -> tuple[Objective, ...]:
        """The objectives the run decides: a search's run decides its capacity ones."""
        if self.spec.capacity is None:
            return self.spec.objectives
        from pytest_latency.spec.capacity import split_objectives

        return tuple(split_objectives(self.spec.objectives)[1])

    def _locate(self) -> Locate:
        """Where warnings about an objective point: its line in this file."""
        from pytest_latency.plugin.gate import user_path

        path = user_path(self.path, self.config.invocation_params.dir)
        lines = dict(zip(self.spec.objectives, self.spec.objective_lines, strict=False))
        return lambda objective: (path, lines.get(objective, 1))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from pytest_latency.plugin.gate import REPORTED_AS_TEXT

        if isinstance(excinfo.value, REPORTED_AS_TEXT):  # our errors, and warnings under -W error
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"latency spec {self.name}"


def _strict_markers(config: pytest.Config) -> bool:
    """Whether unknown markers are errors: ``--strict-markers`` (or ``strict``, which
    implies it in pytest 9), as pytest itself decides; options this pytest lacks count
    as unset (pytest 8 keeps the flags as options)."""
    if getattr(config.option, "strict_markers", False) is True:
        return True
    for name in ("strict_markers", "strict"):
        try:
            value = config.getini(name)
        except ValueError:
            continue
        if value is not None:
            return bool(value)
    return False


def collect_file(file_path: Path, parent: pytest.Collector) -> SloFile | None:
    if file_path.name.endswith(SUFFIX):
        return SloFile.from_parent(parent, path=file_path)
    return None
