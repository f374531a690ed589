"""TTFT error against the scripted known-truth server (tests/helpers/scripted_server.py).

The scripted server logs the ``perf_counter_ns`` instant it wrote each chunk; the
driver's first-token instant minus that instant is the measurement error (loopback
delivery plus both event loops; never negative). The server runs in a thread of this
process (its own event loop), as in the driver's timing tests. Bounded: ``--requests``
requests at ``--rate``.

    .venv/bin/python benchmarks/bench_ttft_truth.py --requests 400 --rate 40
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the root holds tests/helpers/

from pytest_latency.driver import Status, Target, run_plan
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rate", type=float, default=40.0)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    steps = [Step(0.005 + 0.005 * i, chat_chunk(f"t{i}"), "content") for i in range(args.tokens)]
    script = Script(steps=(*steps, Step(0.01 + 0.005 * args.tokens, DONE)))
    server = ScriptedServer()
    server.start()
    try:
        server.route("truth", script)
        plan = plan_at([i / args.rate for i in range(args.requests)], timeout_s=10.0)
        result = run_plan(plan, Target(server.url, "truth"), workers=args.workers)
        exchanges = server.by_trace()
        errors = [
            record.first_token_s
            - (exchanges[record.trace_id].instants("content")[0] - result.started_ns) / 1e9
            for record in result.records
            if record.status is Status.OK and record.first_token_s is not None
        ]
    finally:
        server.stop()
    values = np.array(errors) * 1e3
    print(
        f"requests {len(result.records)} ok {len(errors)}  TTFT error vs truth: "
        f"median {np.median(values):.3f} ms  p99 {np.percentile(values, 99):.3f} ms  "
        f"max {values.max():.3f} ms  min {values.min():.3f} ms"
    )


if __name__ == "__main__":
    main()
