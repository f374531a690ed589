"""``compare`` pairs runs by key as ``--latency-baseline`` matches them."""

from pytest_latency.analysis.pairing import pair_keys


def test_the_same_test_from_another_root_is_paired():
    pairing = pair_keys(["specs/chat.slo.yaml::chat"], ["c2/specs/chat.slo.yaml::chat"])
    assert pairing.pairs == (("specs/chat.slo.yaml::chat", "c2/specs/chat.slo.yaml::chat"),)
    assert pairing.only_a == () and pairing.only_b == ()


def test_equal_keys_pair_first_and_others_are_left_over_on_their_side():
    pairing = pair_keys(
        ["t.py::test_a", "t.py::test_b", "checkout"],
        ["checkout", "t.py::test_a", "t.py::test_c"],
    )
    assert pairing.pairs == (("t.py::test_a", "t.py::test_a"), ("checkout", "checkout"))
    assert pairing.only_a == ("t.py::test_b",) and pairing.only_b == ("t.py::test_c",)


def test_another_test_name_in_the_same_file_is_never_paired():
    pairing = pair_keys(["a/t.py::test_x"], ["b/a/t.py::test_y"])
    assert pairing.pairs == () and pairing.only_b == ("b/a/t.py::test_y",)


def test_two_candidates_are_not_guessed_between_and_the_reason_is_given():
    pairing = pair_keys(["t.py::test_x"], ["one/t.py::test_x", "two/t.py::test_x"])
    assert pairing.pairs == ()
    (reason,) = pairing.ambiguous
    assert reason.startswith("t.py::test_x: ") and "several runs" in reason


def test_repeated_runs_pair_by_their_number():
    pairing = pair_keys(
        ["s.slo.yaml::s", "s.slo.yaml::s#2"], ["x/s.slo.yaml::s#2", "x/s.slo.yaml::s"]
    )
    assert set(pairing.pairs) == {
        ("s.slo.yaml::s", "x/s.slo.yaml::s"),
        ("s.slo.yaml::s#2", "x/s.slo.yaml::s#2"),
    }
