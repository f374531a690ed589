"""Strict specs: every value is typed, finite and bounded, in YAML (file:line) and Python."""

import json
import math
import textwrap

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_latency.spec import model as spec
from pytest_latency.spec.model import Objective, Phase, ServerSpec, SpecError, Workload, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_objectives, load_slo_file

BASE = """\
workload:
  seed: 7
  input_tokens: [200, 400]
  output_tokens: 200
  timeout: 30s
  warmup: 2
  repeat: 2
  cooldown: 5s
  phases:
    - name: steady
      rate: 5
      duration: 20s
      arrival: gamma
      burstiness: 0.5
objectives:
  - metric: ttft
    p: 95
    max: 700ms
  - metric: e2e
    p: 95
    max_regression: 10%
    min_change: 2ms
"""


def _write(tmp_path, text):
    path = tmp_path / "case.slo.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def _error(tmp_path, text) -> SpecFileError:
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(_write(tmp_path, text))
    return caught.value


def test_the_base_spec_loads(tmp_path):
    loaded = load_slo_file(_write(tmp_path, BASE))
    assert loaded.workload.repeat == 2 and loaded.workload.phases[0].burstiness == 0.5


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "problem"),
    [
        ("rate: 5", "rate: .inf", 11, "workload.phases[0].rate", "finite"),
        ("rate: 5", "rate: 100001", 11, "workload.phases[0].rate", "<= 100000"),
        ("duration: 20s", "duration: .inf", 12, "workload.phases[0].duration", "finite"),
        ("duration: 20s", "duration: 25h", 12, "workload.phases[0].duration", "<= 86400"),
        ("burstiness: 0.5", "burstiness: .inf", 14, "workload.phases[0].burstiness", "finite"),
        ("burstiness: 0.5", "burstiness: .nan", 14, "workload.phases[0].burstiness", "finite"),
        ("seed: 7", "seed: -1", 2, "workload.seed", "0..9223372036854775807"),
        ("seed: 7", "seed: 9223372036854775808", 2, "workload.seed", "whole number in"),
        ("timeout: 30s", "timeout: .inf", 5, "workload.timeout", "finite"),
        ("timeout: 30s", "timeout: 2h", 5, "workload.timeout", "<= 3600"),
        ("warmup: 2", "warmup: 10001", 6, "workload.warmup", "0..10000"),
        ("cooldown: 5s", "cooldown: .inf", 8, "workload.cooldown", "finite"),
        ("[200, 400]", "[200, 1000001]", 3, "workload.input_tokens", "1..1000000"),
        ("output_tokens: 200", "output_tokens: 1000001", 4, "workload.output_tokens", "1..1000000"),
        ("output_tokens: 200", "output_tokens: 1e400", 4, "workload.output_tokens", "whole"),
        ("max: 700ms", "max: .inf", 18, "objectives[0].max", "finite"),
        ("max: 700ms", "max: 1e400s", 18, "objectives[0].max", "finite"),
        ("p: 95\n    max: 7", "p: .nan\n    max: 7", 17, "objectives[0].p", "finite"),
        ("min_change: 2ms", "min_change: .inf", 22, "objectives[1].min_change", "finite"),
    ],
)
def test_out_of_bounds_values_name_file_line_and_key(tmp_path, old, new, line, key, problem):
    assert old in BASE
    error = _error(tmp_path, BASE.replace(old, new, 1))
    assert (error.line, error.key) == (line, key), str(error)
    assert problem in error.problem
    assert str(error).startswith(f"{error.path}:{line}: {key}: ")


def test_the_planned_request_count_is_bounded(tmp_path):
    text = BASE.replace("rate: 5", "rate: 100000").replace("duration: 20s", "duration: 60s")
    error = _error(tmp_path, text)  # 2 repeats x 100,000/s x 60 s = 12,000,000 requests
    assert (error.line, error.key) == (9, "workload.phases")
    assert "12,000,000 requests" in error.problem and "10,000,000" in error.problem


@pytest.mark.parametrize("section", ["workload", "objectives"])
def test_a_missing_section_is_named_with_file_and_line(tmp_path, section):
    workload, objectives = BASE.split("objectives:")
    text = workload if section == "objectives" else "objectives:" + objectives
    error = _error(tmp_path, "# a comment first\n" + text)
    assert (error.key, error.line) == (section, 2)  # the document starts on line 2
    assert str(error).startswith(f"{error.path}:2: {section}: missing")


def test_limits_are_named_constants():
    assert spec.MAX_RATE == 100_000
    assert spec.MAX_DURATION_S == 24 * 3600
    assert spec.MAX_PLANNED_REQUESTS == 10_000_000
    assert spec.MAX_TOKENS == 1_000_000
    assert spec.MAX_TIMEOUT_S == 3600
    assert spec.MAX_WARMUP == 10_000
    assert spec.MAX_SEED == 2**63 - 1


STEADY = Phase("steady", rate=5, duration_s=1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Phase("a", rate="fast", duration_s=1),  # type: ignore[arg-type]
        lambda: Phase("a", rate=math.inf, duration_s=1),
        lambda: Phase("a", rate=1, duration_s=math.nan),
        lambda: Phase(5, rate=1, duration_s=1),  # type: ignore[arg-type]
        lambda: Phase("a", rate=1, duration_s=1, arrival=["poisson"]),  # type: ignore[arg-type]
        lambda: Phase("a", rate=1, duration_s=1, burstiness=None),  # type: ignore[arg-type]
        lambda: Phase("a", rate=True, duration_s=1),
        lambda: Workload(phases=(STEADY,), seed="7"),  # type: ignore[arg-type]
        lambda: Workload(phases=(STEADY,), seed=-1),
        lambda: Workload(phases=(STEADY,), seed=2**63),
        lambda: Workload(phases=(STEADY,), timeout_s=math.inf),
        lambda: Workload(phases=(STEADY,), input_tokens=5),  # type: ignore[arg-type]
        lambda: Workload(phases=(STEADY,), input_tokens=(1, "2")),  # type: ignore[arg-type]
        lambda: Workload(phases=(STEADY,), output_tokens=2.5),  # type: ignore[arg-type]
        lambda: Workload(phases=(STEADY,), warmup_requests=None),  # type: ignore[arg-type]
        lambda: Workload(phases=(STEADY,), repeat="2", cooldown_s=1),  # type: ignore[arg-type]
        lambda: Workload(phases=(STEADY,), repeat=2, cooldown_s=math.inf),
        lambda: Workload(phases=("steady",)),  # type: ignore[arg-type]
        lambda: Workload(phases=None),  # type: ignore[arg-type]
        lambda: Workload(phases=(Phase("x", rate=100_000, duration_s=101),)),
        lambda: objective(5, p=95, max="1s"),  # type: ignore[arg-type]
        lambda: objective("ttft", p="95", max="1s"),  # type: ignore[arg-type]
        lambda: objective("ttft", p=math.nan, max="1s"),
        lambda: objective("ttft", p=95, max=math.inf),  # type: ignore[arg-type]
        lambda: objective("ttft", p=95, max=10**400),  # type: ignore[arg-type]
        lambda: objective("ttft", p=95, max_s=math.inf),
        lambda: objective("ttft", p=95, max_ms=10**400),
        lambda: objective("ttft", p=95, max=[1]),  # type: ignore[arg-type]
        lambda: objective("ttft", p=95, max_regression="10%", min_change=math.inf),
        lambda: objective("ttft", p=95, max="1s", phase=3),  # type: ignore[arg-type]
        lambda: objective("ttft", p=95, max="1s", input_tokens=(1,)),  # type: ignore[arg-type]
        lambda: Objective(metric="ttft", p=95, max_s="1"),  # type: ignore[arg-type]
        lambda: Objective(metric=["ttft"], p=95, max_s=1),  # type: ignore[arg-type]
        lambda: Objective(metric="ttft", p=95, max_regression=math.inf),
        lambda: Objective(metric="error_rate", max_s=math.nan),
        lambda: ServerSpec(kind="url", url=8000),  # type: ignore[arg-type]
        lambda: ServerSpec(api=None),  # type: ignore[arg-type]
        lambda: ServerSpec(options=[]),  # type: ignore[arg-type]
    ],
)
def test_the_python_api_raises_spec_error_for_wrong_types_and_values(make):
    with pytest.raises(SpecError):
        make()


def test_valid_python_specs_still_build():
    workload = Workload(phases=[STEADY], input_tokens=[10, 20], seed=2**63 - 1)
    assert workload.phases == (STEADY,) and workload.input_tokens == (10, 20)
    assert objective("ttft", p=95, max="700ms", input_tokens=[1, 256]).input_tokens == (1, 256)
    assert objective("error_rate", max="1%").max_s == pytest.approx(0.01)


# Hypothesis: arbitrary YAML-ish documents never raise anything but SpecError.

KEYS = [
    "server",
    "workload",
    "objectives",
    "description",
    "markers",
    "seed",
    "input_tokens",
    "output_tokens",
    "timeout",
    "warmup",
    "ignore_eos",
    "repeat",
    "cooldown",
    "phases",
    "name",
    "arrival",
    "rate",
    "duration",
    "burstiness",
    "metric",
    "p",
    "max",
    "max_fraction",
    "max_regression",
    "min_change",
    "phase",
    "kind",
    "url",
    "model",
    "api",
    "options",
    "image",
    "gpus",
]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**63, 2**64, 10**400, -(10**400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "700ms", "1e400s", "30s", "5%", "150%", "ttft", "error_rate", "steady"]),
    st.sampled_from(["700", "0.5", "slow", "not-a-name", "class"]),
    st.sampled_from(["poisson", "gamma", "chat", "sim", "url", "http://x", "all", "0,1"]),
    st.text(max_size=8),
)


def _containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=6),
    )


DOCUMENTS = st.recursive(SCALARS, _containers, max_leaves=25)


def _slots(node: object) -> list[tuple[object, object]]:
    """Every (container, key or index) in a parsed document."""
    found: list[tuple[object, object]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node)  # type: ignore[arg-type]
    for key, child in items:
        found.append((node, key))
        if isinstance(child, dict | list):
            found.extend(_slots(child))
    return found


def _check_only_spec_errors(target, document) -> None:
    """Loading raises SpecFileError (naming the file) or gives a spec within the limits."""
    target.write_text(yaml.safe_dump(document))
    try:
        loaded = load_slo_file(target)
    except SpecFileError as error:
        assert str(error).startswith(f"{target}:")
    else:
        _assert_within_limits(loaded.workload, loaded.objectives)
    try:
        objectives = load_objectives(target)
    except SpecFileError as error:
        assert str(error).startswith(f"{target}:")
    else:
        _assert_within_limits(None, objectives)


def _assert_within_limits(workload, objectives) -> None:
    if workload is not None:
        json.dumps(workload.to_json(), allow_nan=False)  # every number finite
        assert 0 <= workload.seed <= spec.MAX_SEED
        assert workload.timeout_s <= spec.MAX_TIMEOUT_S
        planned = sum(phase.rate * phase.duration_s for phase in workload.phases)
        assert planned * workload.repeat <= spec.MAX_PLANNED_REQUESTS
    for item in objectives:
        values = (item.max_s, item.p, item.max_regression, item.min_change_s)
        assert all(math.isfinite(value) for value in values if value is not None)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=st.dictionaries(st.sampled_from(KEYS[:5]), DOCUMENTS, max_size=4))
def test_random_documents_raise_only_spec_errors(tmp_path_factory, document):
    _check_only_spec_errors(tmp_path_factory.mktemp("h") / "random.slo.yaml", document)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=DOCUMENTS)
def test_a_valid_spec_with_one_value_replaced_raises_only_spec_errors(
    tmp_path_factory, data, value
):
    document = yaml.safe_load(BASE)
    container, key = data.draw(st.sampled_from(_slots(document)))
    if data.draw(st.booleans()) and isinstance(container, dict):
        del container[key]  # a missing key, or a whole missing section
    else:
        container[key] = value  # type: ignore[index]
    _check_only_spec_errors(tmp_path_factory.mktemp("h") / "mutated.slo.yaml", document)
