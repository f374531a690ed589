"""A recovery objective over too few episodes, refused before sending, through pytest."""

import socket
import textwrap

import pytest


def _closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _spike(server: str, *episodes: str) -> str:
    """A spike and its recovery; ``episodes``: ``repeat: k`` and its cool-down, if any."""
    workload = ["  input_tokens: 10", "  output_tokens: 4", *(f"  {line}" for line in episodes)]
    return "\n".join([f"server: {server}", "workload:", *workload, PHASES])


PHASES = (
    textwrap.indent(
        textwrap.dedent(
            """\
        phases:
          - {name: steady, arrival: constant, rate: 20, duration: 2s}
          - {name: burst, arrival: constant, rate: 80, duration: 500ms}
          - {name: recover, arrival: constant, rate: 20, duration: 3s}
        """
        ),
        "  ",
    )
    + "objectives:\n  - {metric: recovery, max: 2s, after: burst}\n"
)


@pytest.mark.slow
def test_one_burst_recovery_is_refused_with_the_fix_before_any_server_is_asked(pytester):
    # The server is a closed port: the error is the plan's, nothing reached for it.
    pytester.makefile(".slo.yaml", spike=_spike(f'{{url: "{_closed_url()}"}}'))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    text = " ".join(result.stdout.str().split())
    assert "the plan cannot decide 1 of 1 objectives (spike.slo.yaml::spike)" in text
    assert "recovery after burst <= 2s: 1 episode planned, at least 8 needed at 99%" in text
    assert "give repeat: 8, cooldown: 10s, or until_decided: {max: " in text
    assert "Nothing was sent" in text and "server not ready" not in text
    # Seven episodes are still too few; the message keeps the workload's cool-down.
    pytester.makefile(
        ".slo.yaml", spike=_spike(f'{{url: "{_closed_url()}"}}', "repeat: 7", "cooldown: 1s")
    )
    again = " ".join(pytester.runpytest().stdout.str().split())
    assert "7 episodes planned, at least 8 needed" in again and "repeat: 8, cooldown: 1s" in again
