"""The fake autoscaler under load: N one-node ProvisioningRequests created at once on a pool of 200
nodes; from a client-side watch (millisecond timestamps): creation -> Provisioned=True (p50, p95,
max) and nodes created per second (two Tapes: the time each change arrived); CPU seconds of the controller per request.  One request per
loop, loops back to back: the speed must come from loops that read caches and write only what
they must.  Needs a demo cluster (`tau-demo cluster up`); starts its own fake-ca with
bench/pools-bench.yaml (or, with --autoscaler real, the real Cluster Autoscaler 1.36.1 through
`tau-demo real-ca` with the same pools and scan interval), so stop any other autoscaler first.
Leaves the cluster as it found it (the demo pool table is published again at the end).

    .venv/bin/python -m bench.provreq_latency [--requests 100] [--scan-interval 100ms] [--runs 1]
                                              [--autoscaler fake|real|ideal] [--versus ideal]

--autoscaler ideal: bench.ideal_autoscaler, the serial ceiling (the fake's three writes per request, no planning).
--versus B: each run of the autoscaler under test is paired with a run of B right after it (A B A B ...), and the
ratio of their nodes/s is given pair by pair, with its median.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from demo.cluster import procs
from demo.cluster.state import default_kubeconfig
from k8s import heartbeat, poll
from k8s import resources as R
from k8s.client import Kube
from k8s.keys import (BEST_EFFORT_ATOMIC, CA_STATUS, FAKE_CA_FIELD_MANAGER, FAKE_CA_LEASE, GPU, POOL_LABEL, POOL_TABLE,
                      PROVISIONED, REAL_CA_LEASE)
from k8s.objects import is_true, name as name_of
from k8s.paths import POOLS_FILE, REPO
from k8s.pools import load_pools, pools_to_configmap
from k8s.tape import Delivered, Tape
from k8s.watch import Event
from scenarios.kit.harness import ScenarioFailed

from .common import median, p95

BENCH_NAMESPACE = "bench"
POOLS = Path(__file__).with_name("pools-bench.yaml")
POOL = load_pools(POOLS)[0].name
CA_READY_TIMEOUT = 300.0          # seconds for an autoscaler to say its caches synced (the real CA lists first)
PROVISIONED_TIMEOUT = 300.0    # seconds for every request of a run to be seen Provisioned
POOL_EMPTY_TIMEOUT = 120.0     # seconds for the bench pool's nodes to go after a run


def table_to_restore(before: dict | None) -> dict:
    """The pool table to put back after the run (pure): the one found before it, or the demo's
    (manifests/node-pools.yaml) when there was none.  A table left by the bench's fake-ca would make
    preflight plan against benchpool."""
    table = pools_to_configmap(load_pools(POOLS_FILE))
    if before is not None:
        table["data"] = dict(before.get("data") or {})
    return table


def restore_pool_table(k: Kube, before: dict | None) -> None:
    k.apply(R.CONFIG_MAP, table_to_restore(before), field_manager=FAKE_CA_FIELD_MANAGER)
    print(f"pool table {POOL_TABLE[0]}/{POOL_TABLE[1]} restored "
          f"({'as found' if before is not None else 'from ' + POOLS_FILE.name})")


def restore_status(k: Kube, before: dict | None) -> None:
    """The autoscaler status ConfigMap its fake-ca wrote (benchpool's node group): as found, or gone."""
    if before is None:
        k.delete(R.CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
        return
    k.apply(R.CONFIG_MAP, R.CONFIG_MAP.new(CA_STATUS[1], CA_STATUS[0], data=dict(before.get("data") or {})),
            field_manager=FAKE_CA_FIELD_MANAGER)


def provisioned_at(seen: list[Delivered]) -> dict[str, float]:
    """When each request was first seen Provisioned=True, from its tape's changes (pure)."""
    out: dict[str, float] = {}
    for t, typ, pr in seen:
        if typ != Event.DELETED and is_true(pr, PROVISIONED):
            out.setdefault(name_of(pr), t)
    return out


def added_at(seen: list[Delivered]) -> list[float]:
    """When each node was first seen added, in order, from its tape's changes (pure)."""
    out: dict[str, float] = {}
    for t, typ, node in seen:
        if typ == Event.ADDED:
            out.setdefault(name_of(node), t)
    return sorted(out.values())


def autoscaler_argv(autoscaler: str, kc: str, scan: str, ca_flags: tuple[str, ...] = ()) -> list[str]:
    """The command that starts the autoscaler under test (pure): the fake with the bench pools and
    booking long enough to outlast the run, the real one through `tau-demo real-ca` (with extra
    flags of the CA's own after `--`), or the ideal loop (a module of bench/: no `tau-demo` command)."""
    if autoscaler == "ideal":
        return ["-m", "bench.ideal_autoscaler", "--kubeconfig", kc, "--pools", str(POOLS)]
    if autoscaler == "real":
        return ["real-ca", "--kubeconfig", kc, "--pools", str(POOLS), "--scan-interval", scan,
                *(["--", *ca_flags] if ca_flags else [])]
    return ["fake-ca", "--kubeconfig", kc, "--pools", str(POOLS), "--booking", "10m", "--scan-interval", scan]


def real_ca_pid(log: str) -> int | None:
    """The pid of the cluster-autoscaler process `tau-demo real-ca` started, from its log (pure)."""
    for line in log.splitlines():
        if "started cluster-autoscaler pid " in line:
            return int(line.split("started cluster-autoscaler pid ", 1)[1].split()[0])
    return None


METRIC = "apiserver_request_duration_seconds"
WATCHED = ("provisioningrequests", "nodes", "leases")


def apiserver_times(text: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(verb, resource[/subresource]) -> (seconds, count) from the apiserver's /metrics text (pure):
    the time the apiserver itself spent on requests for the resources a scale-up touches."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for line in text.splitlines():
        if not line.startswith((METRIC + "_sum{", METRIC + "_count{")):
            continue
        name, _, rest = line.partition("{")
        labels_text, _, value = rest.rpartition("} ")
        labels = dict(part.split("=", 1) for part in labels_text.split(",") if "=" in part)
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("resource") not in WATCHED or labels.get("verb") in ("WATCH", "LIST"):
            continue
        key = (labels["verb"], labels["resource"] + ("/" + labels["subresource"] if labels.get("subresource") else ""))
        secs, count = out.get(key, (0.0, 0.0))
        if name.endswith("_sum"):
            secs += float(value)
        else:
            count += float(value)
        out[key] = (secs, count)
    return out


def apiserver_delta(before: dict, after: dict) -> list[tuple[str, str, int, float]]:
    """(verb, resource, requests, mean ms) for what happened between two readings, busiest first (pure)."""
    rows = []
    for key, (secs, count) in after.items():
        s0, c0 = before.get(key, (0.0, 0.0))
        if count - c0 > 0:
            rows.append((key[0], key[1], int(count - c0), (secs - s0) / (count - c0) * 1000))
    return sorted(rows, key=lambda r: -r[2] * r[3])


def start_autoscaler(kc: str, scan: str, autoscaler: str, ca_flags: tuple[str, ...]) -> tuple[subprocess.Popen, Path]:
    """The autoscaler under test as a child process, once it said its caches synced; its log's path."""
    logpath = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-{autoscaler}-ca.log"
    with open(logpath, "w") as log:
        argv = autoscaler_argv(autoscaler, kc, scan, ca_flags)
        ca = subprocess.Popen([sys.executable, *(["-m", "cli"] if autoscaler != "ideal" else []), *argv],
                              stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"),
                              cwd=REPO)
    poll.eventually(lambda: "caches synced; ready" in logpath.read_text() or ca.poll() is not None,
                    CA_READY_TIMEOUT, 0.1)
    if ca.poll() is not None or "caches synced; ready" not in logpath.read_text():
        ca.terminate()
        sys.exit(f"{autoscaler} autoscaler {'exited' if ca.poll() is not None else 'not ready'}: "
                 f"{logpath.read_text()[-2000:]}")
    return ca, logpath


def burst(k: Kube, requests: int) -> tuple[dict[str, float], dict[str, float], list[float], float]:
    """Create the requests at once and wait until each was seen Provisioned: when each was created, when each was
    seen Provisioned, when each bench node was seen added, and how long the creates took."""
    made: dict[str, float] = {}
    with Tape(k, (R.PROVREQ,), BENCH_NAMESPACE) as prs, \
            Tape(k, (R.NODE,), node_selector=f"{POOL_LABEL}={POOL}") as nodes:
        t0 = time.time()
        for i in range(requests):
            name = f"bench-{i:03d}"
            k.create(R.PROVREQ, R.PROVREQ.new(name, BENCH_NAMESPACE, spec={
                "provisioningClassName": BEST_EFFORT_ATOMIC,
                "podSets": [{"podTemplateRef": {"name": "bench-t"}, "count": 1}]}), BENCH_NAMESPACE)
            made[name] = time.time()
        created_in = time.time() - t0
        poll.eventually(lambda: len(provisioned_at(list(prs.changes))) >= requests, PROVISIONED_TIMEOUT, 0.05)
        return made, provisioned_at(list(prs.changes)), added_at(list(nodes.changes)), created_in


def clear_bench_pool(k: Kube) -> None:
    """Delete the run's requests and the bench pool's nodes; wait until the pool is empty."""
    for pr in k.list(R.PROVREQ, BENCH_NAMESPACE)[0]:
        k.delete(R.PROVREQ, pr["metadata"]["name"], BENCH_NAMESPACE)
    for n in k.list(R.NODE, label_selector=f"{POOL_LABEL}={POOL}")[0]:
        k.delete(R.NODE, n["metadata"]["name"])
    poll.until(lambda: not k.list(R.NODE, label_selector=f"{POOL_LABEL}={POOL}")[0], POOL_EMPTY_TIMEOUT,
               f"the bench pool {POOL} to be empty", 0.5)


def one_run(k: Kube, kc: str, requests: int, scan: str, autoscaler: str = "fake",
            ca_flags: tuple[str, ...] = ()) -> dict:
    ca, logpath = start_autoscaler(kc, scan, autoscaler, ca_flags)
    try:
        pids = [ca.pid] + ([real_ca_pid(logpath.read_text())] if autoscaler == "real" else [])
        cpu0 = sum(procs.cpu_seconds(p) for p in pids)
        metrics0 = apiserver_times(k.raw("/metrics"))
        made, provisioned, times, created_in = burst(k, requests)
        cpu = sum(procs.cpu_seconds(p) for p in pids) - cpu0
        apiserver = apiserver_delta(metrics0, apiserver_times(k.raw("/metrics")))
        lat = [provisioned[n] - made[n] for n in made if n in provisioned]
        span = (times[-1] - times[0]) if len(times) > 1 else float("nan")
        return {"requests": requests, "created_in": created_in, "provisioned": len(lat),
                "p50": median(lat), "p95": p95(lat), "max": max(lat) if lat else float("nan"),
                "nodes": len(times), "nodes_per_s": (len(times) - 1) / span if len(times) > 1 else float("nan"),
                "cpu_per_request": cpu / requests, "apiserver": apiserver}
    finally:
        ca.terminate()
        ca.wait(60)
        clear_bench_pool(k)


def prepare_bench_namespace(k: Kube) -> tuple[dict | None, dict | None]:
    """The bench namespace and its pod template; the pool table and the autoscaler status found before the run."""
    table_before = k.get_or_none(R.CONFIG_MAP, POOL_TABLE[1], POOL_TABLE[0])
    status_before = k.get_or_none(R.CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
    k.apply(R.NAMESPACE, R.NAMESPACE.new(BENCH_NAMESPACE), "bench")
    k.apply(R.POD_TEMPLATE, R.POD_TEMPLATE.new("bench-t", BENCH_NAMESPACE, template={"spec": {
        "nodeSelector": {"agentpool": "benchpool"},
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {GPU: "8"}, "limits": {GPU: "8"}}}]}}),
        "bench")
    return table_before, status_before


def put_back(k: Kube, table_before: dict | None, status_before: dict | None) -> None:
    """Leave the cluster as the run found it: no bench namespace, the pool table and the status as they were."""
    k.delete(R.POD_TEMPLATE, "bench-t", BENCH_NAMESPACE)
    k.delete(R.NAMESPACE, BENCH_NAMESPACE)
    # gone before the script ends: a next run could not create in a namespace still terminating
    poll.until(lambda: k.get_or_none(R.NAMESPACE, BENCH_NAMESPACE) is None, 120, f"namespace {BENCH_NAMESPACE} to be deleted")
    # leave the cluster as we found it: not the bench pool in the published table
    restore_pool_table(k, table_before)
    restore_status(k, status_before)


def run_table(k: Kube, kc: str, a: argparse.Namespace) -> dict | None:
    """Every run of every scan interval, one table row each (and the pairs' ratio); the last run's figures."""
    print(f"{a.autoscaler} autoscaler{''.join(' ' + f for f in a.real_ca_flag)}"
          + (f", each run paired with one of the {a.versus} autoscaler" if a.versus else ""))
    print("| autoscaler | --scan-interval | requests | p50 | p95 | max | nodes/s | CPU s per request |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios, last = [], None
    for scan in a.scan_interval or ["100ms", "1s"]:
        for _ in range(a.runs):
            pair = []
            for who in [a.autoscaler] + ([a.versus] if a.versus else []):
                r = last = one_run(k, kc, a.requests, scan, who, tuple(a.real_ca_flag) if who == "real" else ())
                pair.append(r["nodes_per_s"])
                rate = f"{r['nodes_per_s']:.{0 if r['nodes_per_s'] >= 10 else 1}f}"
                print(f"| {who} | {scan} | {r['provisioned']}/{r['requests']} | {r['p50']:.2f} s | "
                      f"{r['p95']:.2f} s | {r['max']:.2f} s | {rate} | {r['cpu_per_request'] * 1000:.0f} ms |",
                      flush=True)
            if a.versus:
                ratios.append(pair[0] / pair[1])
    if ratios:
        print(f"\nnodes/s of {a.autoscaler} / {a.versus}, pair by pair: "
              f"{', '.join(f'{x:.2f}' for x in ratios)}; median {median(ratios):.2f}")
    return last


def print_apiserver_time(last: dict) -> None:
    print(f"\napiserver time during the last run (its {METRIC}, any client; writes and reads of "
          f"{', '.join(WATCHED)}):")
    print("| verb | resource | requests | mean |")
    print("| --- | --- | --- | --- |")
    for verb, res, n, ms in last["apiserver"]:
        print(f"| {verb} | {res} | {n} | {ms:.1f} ms |")


def load_arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--scan-interval", action="append", default=None,
                    help="the fake's --scan-interval (repeatable) [default: 100ms and 1s]")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--autoscaler", choices=["fake", "real", "ideal"], default="fake",
                    help="the fake autoscaler, or the real Cluster Autoscaler 1.36.1 (`tau-demo real-ca`; "
                         "needs `tau-demo toolchain ensure --with-real-ca`), or the ideal serial loop [default: fake]")
    ap.add_argument("--versus", choices=["fake", "real", "ideal"], default=None,
                    help="pair each run with one of this autoscaler, right after it; the nodes/s ratio per pair")
    ap.add_argument("--real-ca-flag", action="append", default=[], metavar="FLAG",
                    help="an extra flag for the real CA (repeatable), e.g. --real-ca-flag=--kube-client-qps=1000")
    a = ap.parse_args()
    if a.real_ca_flag and a.autoscaler != "real":
        ap.error("--real-ca-flag needs --autoscaler real")
    return a


def main() -> None:
    a = load_arguments()
    kc = default_kubeconfig()
    k = Kube(kc)
    if heartbeat.alive(k, FAKE_CA_LEASE) or heartbeat.alive(k, REAL_CA_LEASE):
        sys.exit("an autoscaler is running on this cluster; stop it first")
    before = prepare_bench_namespace(k)
    try:
        last = run_table(k, kc, a)
        if last is not None:
            print_apiserver_time(last)
    finally:
        put_back(k, *before)


if __name__ == "__main__":
    try:
        main()
    except (ScenarioFailed, poll.WaitTimedOut) as e:          # a wait timed out: say what, without a traceback
        sys.exit(f"provreq_latency: {e}")
