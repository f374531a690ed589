"""Checks of the Ray generator on a real two-node Ray cluster on this machine.

Run it only inside a private network namespace with just loopback (Ray registers nodes
on the machine's non-loopback address otherwise):

    unshare -n sh -c 'ip link set lo up && exec python tests/e2e/ray_cluster/cluster_checks.py'

It starts a two-node cluster (``ray.cluster_utils.Cluster``, one CPU each) and the
embedded server on 127.0.0.1, runs the scenarios named on the command line (default:
all of ``spike kill too_many sigterm``), prints one JSON object with what each found, and always
shuts everything down. ``--steady-s``/``--burst-s`` size the spike (5 then 25 req/s).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
import numpy as np
import ray
from ray.cluster_utils import Cluster

from pytest_latency.driver import Target
from pytest_latency.driver.ray_workers import WORKER_NAME, run_ray_workers
from pytest_latency.records import Status
from pytest_latency.sim.config import DEFAULT_MODEL
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

READY_TIMEOUT_S = 60.0
ROOT = Path(__file__).resolve().parents[3]
SIGTERM_TEST = """
from pytest_latency import steady

def test_long(latency):
    latency.run(steady(rate=10, duration_s=20), output_tokens=16, seed=3)
"""


def start_server() -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "pytest_latency.sim", "--host", "127.0.0.1", "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()  # the banner, or EOF if it failed
    found = re.search(r"listening on (\S+)", line)
    if not found:
        server.kill()
        raise RuntimeError(f"the embedded server did not start: {line!r}")
    return server, found.group(1)


def served(url: str) -> float:
    """Requests the embedded server has started serving (its own counter)."""
    try:
        text = httpx.get(f"{url}/metrics", timeout=2.0).text
    except httpx.HTTPError:
        return 0.0
    found = re.search(r"^sim:requests_scheduled_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"never {what}")
        time.sleep(0.05)  # polls for an event


def spike(steady_s: float, burst_s: float) -> Workload:
    return Workload(
        phases=(
            Phase(name="steady", arrival="poisson", rate=5, duration_s=steady_s),
            Phase(name="burst", arrival="poisson", rate=25, duration_s=burst_s),
        ),
        seed=7,
        input_tokens=(200, 400),
        output_tokens=16,
        timeout_s=10.0,
    )


def summary(result: Any, offered: int, wall_s: float) -> dict[str, Any]:
    lags = [r.schedule_lag_s for r in result.records if r.schedule_lag_s is not None]
    statuses: dict[str, int] = {}
    for record in result.records:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
    return {
        "offered": offered,
        "records": len(result.records),
        "unique_ids": len({record.id for record in result.records}),
        "statuses": statuses,
        "lag_p50_s": float(np.percentile(lags, 50)) if lags else None,
        "lag_p99_s": float(np.percentile(lags, 99)) if lags else None,
        "wall_s": wall_s,
        "workers": [worker.to_json() for worker in result.workers],
        "client": None if result.client is None else result.client.to_json(),
        "cancelled_errors": sorted(
            {r.error or "" for r in result.records if r.status is Status.CANCELLED}
        ),
    }


def leftovers(total_cpus: float) -> dict[str, Any]:
    """Named actors still alive, and whether every CPU is free again (bounded wait)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU", 0) >= total_cpus:
            break
        time.sleep(0.1)  # polls for the cluster to free the resources
    return {
        "named_actors": ray.util.list_named_actors(),
        "cpus_free": ray.available_resources().get("CPU", 0),
        "cpus_total": total_cpus,
    }


def run_spike(url: str, args: argparse.Namespace) -> dict[str, Any]:
    plan = build_plan(spike(args.steady_s, args.burst_s))
    started = time.monotonic()
    result = run_ray_workers(plan, Target(url, model=DEFAULT_MODEL), "auto", workers=2)
    return {
        **summary(result, len(plan.requests), time.monotonic() - started),
        "plan_duration_s": plan.duration_s,
    }


def run_kill(url: str, args: argparse.Namespace, total_cpus: float) -> dict[str, Any]:
    plan = build_plan(spike(4.0, 2.0))
    victim = WORKER_NAME.format(index=1)
    killed: dict[str, Any] = {}

    def kill_when_serving() -> None:
        before = served(url)
        wait_for(lambda: served(url) >= before + 8, "served 8 requests")
        killed["at_served"] = served(url)
        ray.kill(ray.get_actor(victim), no_restart=True)

    killer = threading.Thread(target=kill_when_serving, daemon=True)
    killer.start()
    started = time.monotonic()
    result = run_ray_workers(plan, Target(url, model=DEFAULT_MODEL), "auto", workers=2)
    wall = time.monotonic() - started
    killer.join(timeout=5)
    return {
        **summary(result, len(plan.requests), wall),
        "plan_duration_s": plan.duration_s,
        "victim": victim,
        "killed": killed,
        "left": leftovers(total_cpus),
    }


def run_too_many(url: str) -> dict[str, Any]:
    """More workers than the cluster has CPUs: a clear error at once, nothing left."""
    plan = build_plan(spike(1.0, 1.0))
    started = time.monotonic()
    try:
        run_ray_workers(plan, Target(url, model=DEFAULT_MODEL), "auto", workers=5)
    except RuntimeError as error:
        return {"error": str(error), "wall_s": time.monotonic() - started}
    return {"error": None, "wall_s": time.monotonic() - started}


def run_sigterm(url: str, address: str) -> dict[str, Any]:
    with TemporaryDirectory() as folder:
        where = Path(folder)
        (where / "test_long.py").write_text(SIGTERM_TEST)
        child = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--latency-server", url, "--latency-ray", address, "--latency-ray-workers", "2",
             "--latency-json", "run.json", "test_long.py"],
            cwd=where, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        before = served(url)
        wait_for(lambda: served(url) >= before + 10 or child.poll() is not None, "served 10")
        sent_at = time.monotonic()
        child.send_signal(signal.SIGTERM)
        output, _ = child.communicate(timeout=60)
        exit_s = time.monotonic() - sent_at
        path = where / "run.json"
        document = json.loads(path.read_text()) if path.exists() else None
    sys.path.insert(0, str(ROOT))  # the suite's schema helper, as the suite imports it
    from tests.helpers.json_schema import problems

    run = document["runs"][0] if document else {}
    requests = run.get("requests", [])
    return {
        "exit_code": child.returncode,
        "exit_s": exit_s,
        "interrupted": run.get("interrupted"),
        "records": len(requests),
        "unique_ids": len({r["id"] for r in requests}),
        "offered": sum(phase["offered"] for phase in run.get("phases", [])),
        "ok": sum(1 for r in requests if r["status"] == "ok"),
        "workers": (run.get("generator") or {}).get("workers"),
        "schema_problems": problems(document) if document else ["no JSON written"],
        "output_tail": output[-2000:],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenarios", nargs="*", default=["spike", "kill", "too_many", "sigterm"])
    parser.add_argument("--steady-s", type=float, default=4.0)
    parser.add_argument("--burst-s", type=float, default=2.0)
    args = parser.parse_args()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    server = None
    found: dict[str, Any] = {}
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        found["nodes"] = sorted(node["NodeManagerAddress"] for node in ray.nodes())
        total_cpus = ray.cluster_resources().get("CPU", 0)
        server, url = start_server()
        for scenario in args.scenarios:
            if scenario == "spike":
                found["spike"] = run_spike(url, args)
            elif scenario == "kill":
                found["kill"] = run_kill(url, args, total_cpus)
            elif scenario == "too_many":
                found["too_many"] = run_too_many(url)
            elif scenario == "sigterm":
                found["sigterm"] = run_sigterm(url, cluster.address)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
