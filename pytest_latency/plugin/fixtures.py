"""The ``latency`` fixture: a thin adapter from a test to the session's runner.

The plugin registers this module when pytest configures, so it stays light: the
paired comparison (scipy) loads when a test first compares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_latency.errors import ServerStartError, UndecidablePlan
from pytest_latency.plugin.session import SESSION_KEY, LatencySession
from pytest_latency.servers import ServerInfo
from pytest_latency.spec.model import Objective, Phase, ServerSpec, SpecError, Workload
from pytest_latency.spec.plan_scope import check_scopes

if TYPE_CHECKING:
    from pytest_latency.analysis.planning import ObjectivePower
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.plugin.paired import PairedComparison


class LatencyFixture:
    """Run phases against the selected server: ``latency.run(steady(5, 20), burst(25, 5))``."""

    def __init__(self, session: LatencySession, nodeid: str, key: str | None = None) -> None:
        """``key``: the test's baseline key (:mod:`pytest_latency.keys`; default ``nodeid``)."""
        self._session = session
        self._nodeid = nodeid
        #: Every paired comparison this test ran (their verdicts go to the JUnit XML).
        self.comparisons: list[PairedComparison] = []
        self._key = key or nodeid

    def _baseline_key(self, explicit_id: str | None) -> str:
        if explicit_id is None:
            return self._key
        from pytest_latency.keys import check_id

        try:
            return check_id(explicit_id)
        except ValueError as error:
            raise SpecError(f"id: {error}") from None

    @property
    def server(self) -> ServerInfo:
        """The server this test measures (started on first use, shared by the session)."""
        return self._session.server()

    def run(
        self,
        *phases: Phase,
        workload: Workload | None = None,
        server: ServerSpec | None = None,
        id: str | None = None,  # as a spec file's top-level id:
        objectives: Sequence[Objective] = (),
        **workload_options: Any,
    ) -> LatencyResult:
        """Offer the phases (or a whole ``workload``) open loop; every request is recorded.

        ``workload_options`` are :class:`~pytest_latency.Workload` fields: ``seed``,
        ``input_tokens``, ``output_tokens``, ``timeout_s``, ``warmup_requests``, ``ignore_eos``,
        ``prefix`` (:class:`~pytest_latency.Prefix`), ``sessions``
        (:class:`~pytest_latency.Sessions`); see docs/workloads.md. ``id`` names the run in
        baselines instead of the test file and name (renaming or moving the test then keeps
        its baseline); later runs of one id in a test get ``#2``, ``#3``...

        ``until_decided_s=180`` (or ``--latency-until-decided``) extends the run in rounds
        of episodes until every one of ``objectives`` is decided, for at most 180 s in all
        (docs/specs.md); decide them after with ``result.assert_slo(*objectives)``.
        """
        __tracebackhide__ = True
        workload = _workload(phases, workload, workload_options)
        check_scopes(workload, objectives, "latency.run")  # before any load is sent
        return self._session.run(
            workload,
            test=self._nodeid,
            server=server,
            key=self._baseline_key(id),
            node=self._nodeid,
            objectives=objectives,
        )

    def capacity(
        self,
        *objectives: Objective,
        rates: Sequence[float | str],
        probe: str,
        budget: str,
        arrival: str = "poisson",
        server: ServerSpec | None = None,
        id: str | None = None,
        **workload_options: Any,
    ) -> LatencyResult:
        """Search the highest rate at which every objective passes (docs/capacity.md).

        The twin of a spec file's ``capacity:`` block: ``rates`` is the range in req/s,
        ``probe`` the longest probe and ``budget`` the whole search, with units
        (``probe="60s"``, ``budget="6m"``). Each probe decides ``objectives``; gate the
        result with ``result.assert_slo(objective("capacity", min=20))``. Its JSON is
        that of the spec file's run (``capacity``: the bracket and every probe).
        """
        __tracebackhide__ = True
        from pytest_latency.spec.capacity import (
            capacity_spec,
            criterion_problem,
            template_workload,
        )

        if not objectives or any(goal.metric == "capacity" for goal in objectives):
            raise SpecError(
                "capacity() takes the objectives each probe decides (not metric capacity);"
                ' gate its result with result.assert_slo(objective("capacity", min=20))'
            )
        for goal in objectives:
            if (problem := criterion_problem(goal)) is not None:
                raise SpecError(f"{goal.label}: {problem}")
        spec = capacity_spec(rates, probe, budget, arrival)
        return self._session.run_capacity(
            template_workload(spec, **workload_options),
            spec,
            objectives,
            test=self._nodeid,
            server=server,
            key=self._baseline_key(id),
        )

    def plan(
        self,
        *phases: Phase,
        objectives: Sequence[Objective],
        workload: Workload | None = None,
        **workload_options: Any,
    ) -> list[ObjectivePower]:
        """Check, before anything is sent, that the plan can decide ``objectives``.

        Takes what :meth:`run` takes. Raises :class:`~pytest_latency.errors.UndecidablePlan`
        naming each objective the planned requests can never pass, with the phase
        duration that would (a warning instead with ``--latency-allow-undecidable``).
        Returns each objective's planned and needed request counts. ``assert_slo`` makes
        the same check after the run; calling this first saves the run.
        """
        __tracebackhide__ = True
        workload = _workload(phases, workload, workload_options)
        check_scopes(workload, objectives, "latency.plan")
        return self._session.check_plan(workload, objectives, test=self._nodeid)

    def compare(
        self,
        *phases: Phase,
        baseline: ServerSpec,
        candidate: ServerSpec,
        blocks: int = 32,
        workload: Workload | None = None,
        id: str | None = None,
        **workload_options: Any,
    ) -> PairedComparison:
        """Run baseline (A) and candidate (B) in interleaved ABBA blocks of the same load.

        ``blocks`` is a multiple of 4; each group of four (A B B A) is one paired ratio,
        in which linear drift cancels, and every block has its own seed (derived from
        ``--latency-seed`` or the workload's). Decide with
        ``comparison.assert_no_regression("ttft", p=95, max_regression="10%")``. The sign
        test needs 8 groups (32 blocks) to decide at 99% (docs/statistics.md).
        """
        from pytest_latency.plugin.gate import enforce
        from pytest_latency.plugin.paired import run_paired

        workload = _workload(phases, workload, workload_options)
        if self._session.options.seed is not None:
            workload = dataclasses.replace(workload, seed=self._session.options.seed)

        key = self._baseline_key(id)

        def run_block(block: Workload, server: ServerSpec, name: str) -> LatencyResult:
            label = name.removeprefix(self._nodeid)  # the block: "[A1]", "[B2]"...
            return self._session.run(
                block, test=name, server=server, keep_seed=True, key=key + label,
                node=self._nodeid,
            )  # fmt: skip

        comparison = run_paired(
            workload, baseline, candidate, blocks=blocks, test=self._nodeid, run_block=run_block
        )
        comparison.gate = enforce
        self.comparisons.append(comparison)
        return comparison


def _workload(
    phases: Sequence[Phase], workload: Workload | None, options: dict[str, Any]
) -> Workload:
    if workload is None:
        _check_workload_options(options)
        return Workload(phases=tuple(phases), **options)
    if phases or options:
        raise SpecError("pass either phases with options, or a whole workload, not both")
    return workload


def _check_workload_options(options: dict[str, Any]) -> None:
    """An unknown keyword is a SpecError naming the one meant, never a raw TypeError."""
    import difflib

    known = [f.name for f in dataclasses.fields(Workload) if f.name != "phases"]
    for name in options:
        if name in known:
            continue
        # ``timeout`` for ``timeout_s``: the unit suffix is what is usually missing.
        close = [f"{name}_s"] if f"{name}_s" in known else difflib.get_close_matches(name, known)
        hint = f"; did you mean {close[0]}?" if close else f" (known: {', '.join(known)})"
        raise SpecError(f"latency.run: unknown workload option {name!r}{hint}")


# Raised by the fixture's calls when the test could not measure at all (the server is
# not there, the plan cannot decide): the test's body runs them, but they are not a
# latency verdict, so they are reported as errors, as they are for *.slo.yaml files.
_NOT_A_VERDICT = (ServerStartError, UndecidablePlan)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    excinfo = call.excinfo
    if call.when == "call" and excinfo is not None and excinfo.errisinstance(_NOT_A_VERDICT):
        report.latency_error = True  # type: ignore[attr-defined]
    return report


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """Show a call that raised one of ``_NOT_A_VERDICT`` as ERROR, not FAILED."""
    if getattr(report, "latency_error", False) and report.failed:
        return "error", "E", "ERROR"
    return None


@pytest.fixture
def latency(request: pytest.FixtureRequest) -> LatencyFixture:
    """Drive open-loop traffic at the session's server and decide latency objectives."""
    from pytest_latency.keys import key_for_test, project_root

    config, node = request.config, request.node
    root = project_root(node.path, config.inipath, config.rootpath)
    key = key_for_test(root, node.path, node.nodeid)
    return LatencyFixture(config.stash[SESSION_KEY], node.nodeid, key)
