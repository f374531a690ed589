"""``compare`` of the same spec run from two checkouts pairs the runs, as baselines do."""

from __future__ import annotations

import json

import pytest

from pytest_latency.cli.main import main

SPEC = """\
server: {kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001,
         prefill_per_token_s: 0.00001}}
workload:
  input_tokens: 10
  output_tokens: 4
  phases: [{name: steady, arrival: constant, rate: 20, duration: 1s}]
objectives:
  - {metric: error_rate, max: 100%}
"""


@pytest.mark.slow
def test_the_same_spec_from_two_checkouts_is_paired(pytester, monkeypatch, capsys):
    # Checkout one runs from its own folder, checkout two from the folder above it: the
    # keys differ by the path from the root (the case that said "no test is in both").
    for checkout in ("one", "two"):
        (pytester.path / checkout / "specs").mkdir(parents=True)
        (pytester.path / checkout / "specs" / "chat.slo.yaml").write_text(SPEC)
    a, b = pytester.path / "a.json", pytester.path / "b.json"
    monkeypatch.chdir(pytester.path / "one")
    pytester.runpytest("specs/chat.slo.yaml", f"--latency-json={a}").assert_outcomes(passed=1)
    monkeypatch.chdir(pytester.path)
    pytester.runpytest("two/specs/chat.slo.yaml", f"--latency-json={b}").assert_outcomes(passed=1)
    keys = [json.loads(path.read_text())["runs"][0]["baseline_key"] for path in (a, b)]
    assert keys[0] != keys[1] and keys[1].endswith(keys[0])
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--width", "120"]) == 0
    out = capsys.readouterr().out
    assert f"paired 1 run(s) by baseline key: A {keys[0]} = B {keys[1]}" in out
    assert "only in" not in out
