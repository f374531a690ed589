"""Every error and warning pytest-latency raises to its users, in one place.

    LatencyError                      base of every error below: ``except LatencyError``
    ├── SpecError (ValueError)        a workload, objective or server spec is invalid
    │   ├── SpecFileError             ... in a *.slo.yaml file (spec_yaml.py): file:line: key
    │   └── UndecidablePlan           the plan offers too few requests to decide an objective
    ├── RunFileError (ValueError)     a --latency-json or baseline file is missing or malformed
    │   └── BaselineKeyError          a baseline holds no run (or several) for a test's key
    ├── ServerStartError (RuntimeError)  a server could not be started or reached
    │   └── ServerNotReady            the preflight before time zero failed: not reachable,
    │                                 model not listed, or the test request not answered
    ├── ImageBuildError (RuntimeError)   ``pytest-latency images build`` could not build
    ├── ReceiverUnavailable           the OTLP receiver cannot listen where it was asked to
    ├── LatencyRunInvalid (RuntimeError)  the generator fell behind: the run decides nothing
    │   └── LatencyInfrastructureError  the server went away or one error failed most
    │                                 requests: the run measured no server
    └── LatencyObjectiveError (AssertionError)  objectives failed; the message is the evidence

    LatencyInconclusiveWarning (UserWarning)  an objective could not be decided
    LatencyComparisonWarning (UserWarning)    a comparison's premise is shaky (cohort mix)
    LatencyUndecidableWarning (UserWarning)   an undecidable plan ran anyway
                                              (--latency-allow-undecidable)

Ctrl-C during a run raises ``pytest_latency.driver.RunInterrupted``, a KeyboardInterrupt
(so that nothing catching ``Exception`` swallows it) that carries the records so far.
Each class keeps its builtin base, so code written against ``ValueError`` or
``AssertionError`` keeps working. This module imports nothing of the package.
"""

from __future__ import annotations


class LatencyError(Exception):
    """Base of every error pytest-latency raises to its users."""


class SpecError(LatencyError, ValueError):
    """A specification is invalid; the message names the key and the problem."""


class RunFileError(LatencyError, ValueError):
    """A run or baseline file is missing or malformed; the message names file and problem."""


class UndecidablePlan(SpecError):
    """The plan offers too few requests to ever pass an objective; nothing was sent.

    The message names each such objective, its planned and needed request counts, and
    the phase duration that would plan enough.
    """


class BaselineKeyError(RunFileError):
    """A baseline file holds no run for a test's key, or several could be it."""


class ServerStartError(LatencyError, RuntimeError):
    """A server could not be started or reached; the message says which and why."""


class ServerNotReady(ServerStartError):
    """The server failed the preflight before time zero; the message starts with
    ``server not ready:`` and says what failed (connect, model list, test request)."""


class ImageBuildError(LatencyError, RuntimeError):
    """A container image could not be built; the message says which step and why."""


class ReceiverUnavailable(LatencyError):
    """The OTLP receiver cannot listen where it was asked to (port taken, bad host)."""


class LatencyRunInvalid(LatencyError, RuntimeError):
    """The run cannot decide anything: the load generator did not offer the planned load."""


class LatencyInfrastructureError(LatencyRunInvalid):
    """The run measured no server: it went away, exited, or one error (the same HTTP
    status, connection refused) failed most requests. The message starts with
    ``infrastructure:`` and carries the evidence (counts, first and last failed request,
    the error text); the objectives are invalid, not statistics."""


class LatencyObjectiveError(LatencyError, AssertionError):
    """One or more latency objectives failed; the message carries the evidence."""


class LatencyInconclusiveWarning(UserWarning):
    """An objective could not be decided: too few samples or a bound straddling the limit."""


class LatencyComparisonWarning(UserWarning):
    """A comparison's premise is shaky, e.g. the cohort mix changed since the baseline."""


# What a failure shows as its message alone: our errors, and our warnings turned into
# errors (``-W error::pytest_latency.LatencyInconclusiveWarning``).
REPORTED_AS_TEXT = (LatencyError, LatencyInconclusiveWarning, LatencyComparisonWarning)


class LatencyUndecidableWarning(UserWarning):
    """The plan cannot decide an objective, and ``--latency-allow-undecidable`` ran it anyway."""
