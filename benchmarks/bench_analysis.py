"""How fast the analysis summarises a large run, and how much memory a record takes.

    python benchmarks/bench_analysis.py --records 1000000 --gaps 64

Builds synthetic completed records (lognormal TTFT, ``--gaps`` inter-token gaps each,
5% failures), then times what a test's summary does: the per-phase table
(offered/completed/lag/TTFT/ITL/e2e percentiles), three objective verdicts and the
bottleneck diagnosis (which should stay well under a second per 100,000 records).
Memory per record is measured with tracemalloc while the records are built.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as np

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Phase, Workload, objective


def build(count: int, gaps: int, seed: int = 1, as_list: bool = False) -> list[RequestRecord]:
    rng = np.random.default_rng(seed)
    intended = np.sort(rng.uniform(0, count / 1000.0, count))
    ttft = rng.lognormal(-2.0, 0.5, count)
    itl = rng.lognormal(-3.5, 0.3, (count, gaps)).astype(np.float64)
    failed = rng.random(count) < 0.05
    records = []
    for index in range(count):
        record = RequestRecord(
            index, "steady" if index % 4 else "burst", float(intended[index]), 300
        )
        record.sent_s = record.intended_s + 0.001
        if failed[index]:
            record.status = Status.TIMEOUT
        else:
            record.status = Status.OK
            record.first_token_s = record.intended_s + float(ttft[index])
            record.itl_s = itl[index].tolist() if as_list else itl[index]
            record.end_s = record.first_token_s + float(itl[index].sum())
            record.output_tokens = gaps + 1
        records.append(record)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--gaps", type=int, default=64)
    parser.add_argument(
        "--itl-list", action="store_true", help="gaps as Python lists (the driver's own form)"
    )
    args = parser.parse_args()

    # Memory is measured on a smaller build: tracemalloc slows everything it watches.
    sample = min(args.records, 100_000)
    gc.collect()
    tracemalloc.start()
    kept = build(sample, args.gaps, as_list=args.itl_list)
    memory, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    kind = type(kept[1].itl_s).__name__
    del kept
    records = build(args.records, args.gaps, as_list=args.itl_list)
    duration = args.records / 1000.0
    workload = Workload(
        phases=(Phase("steady", rate=750, duration_s=duration),
                Phase("burst", rate=250, duration_s=duration)),
    )  # fmt: skip
    run = LatencyResult(
        test="bench", server=ServerInfo("sim", "http://127.0.0.1:1", "m"), workload=workload,
        records=records, started_at_unix=0.0, elapsed_s=duration,
    )  # fmt: skip
    # CPU time, not wall time: the machine is shared, and this is single-threaded work.
    started = time.process_time()
    summaries = run.summaries()
    summarised = time.process_time() - started
    started = time.process_time()
    run.evaluate(
        [objective("ttft", p=99, max="1s"), objective("itl", p=95, max="50ms"),
         objective("error_rate", max="10%")]
    )  # fmt: skip
    decided = time.process_time() - started
    started = time.process_time()
    run.diagnosis()
    diagnosed = time.process_time() - started
    print(f"records: {args.records:,} with {args.gaps} ITL gaps each")
    print(f"memory per record: {memory / sample:,.0f} bytes (itl as {kind})")
    print(f"phase summaries: {summarised:.2f} s ({len(summaries)} phases)")
    print(f"3 objective verdicts: {decided:.2f} s")
    print(f"diagnosis: {diagnosed:.2f} s")
    print(f"total: {summarised + decided + diagnosed:.2f} s")


if __name__ == "__main__":
    main()
