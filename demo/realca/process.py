"""`tau-demo real-ca`: the real cluster-autoscaler 1.36.1 (kwok provider) as a child process, out of
cluster, against the demo cluster.

Start-up: refuse unless this is a demo cluster (marker ConfigMap), the fake autoscaler is not running
and none of its nodes is left (exclusion.py), and --kubeconfig/--context name what the CA will use;
publish the pool table (for preflight) and the kwok provider's ConfigMaps, both from the pools file;
start the CA with KUBECONFIG equal to --kubeconfig (the provider builds its own client from
$KUBECONFIG, ignoring --kubeconfig), KWOK_PROVIDER_MODE=local, POD_NAMESPACE, metrics on
127.0.0.1:<free port>, no leader election; wait for its first main loop (the
cluster_autoscaler_last_activity{activity="mainSuccessful"} metric); only then renew the heartbeat Lease
`real-ca`.  Stopping (SIGINT/SIGTERM, or the child exiting): the Lease goes, the CA gets SIGTERM, whose
clean-up deletes its status ConfigMap and every node of its node groups; whatever pool node is still
there afterwards is deleted here, so no node is left behind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from demo.cluster.procs import free_port
from k8s import heartbeat, metrics, poll
from k8s.client import Kube
from k8s.duration import go_duration
from k8s.errors import ApiError, NotFound, Unreachable
from k8s.keys import (CA_MAIN_LOOP_METRIC, CA_STATUS, MARKER, POOL_LABEL, REAL_CA_FIELD_MANAGER, REAL_CA_LEASE,
                           REAL_CA_NAMESPACE, SYSTEM_NAMESPACE)
from k8s.resources import CONFIG_MAP, NODE
from k8s.pools import Pool, pools_to_configmap

from . import coexist, exclusion, provider

log = logging.getLogger("real-ca")


class RealCAError(RuntimeError):
    """The real CA cannot start or stopped on its own; the message says why."""


@dataclass(frozen=True)
class Settings:
    """The CA's flags that the demo chooses (the rest keep upstream defaults).  Durations in seconds."""
    scan_interval: float = 10.0                   # upstream default 10s
    scale_down_unneeded_time: float = 20.0        # upstream 10m: the pool drains at demo speed
    scale_down_delay_after_add: float = 20.0      # upstream 10m
    scale_down_delay_after_failure: float = 20.0  # upstream 3m
    max_node_provision_time: float = 120.0        # upstream 15m: kwok nodes register at once
    verbosity: int = 2
    extra_args: tuple[str, ...] = ()


def ca_args(kubeconfig: str, s: Settings, metrics_port: int, namespace: str = REAL_CA_NAMESPACE) -> list[str]:
    return [f"--kubeconfig={kubeconfig}", "--cloud-provider=kwok", "--enable-provisioning-requests=true",
            "--leader-elect=false", f"--namespace={namespace}", f"--address=127.0.0.1:{metrics_port}",
            f"--scan-interval={go_duration(s.scan_interval)}",
            f"--scale-down-unneeded-time={go_duration(s.scale_down_unneeded_time)}",
            f"--scale-down-delay-after-add={go_duration(s.scale_down_delay_after_add)}",
            f"--scale-down-delay-after-failure={go_duration(s.scale_down_delay_after_failure)}",
            f"--max-node-provision-time={go_duration(s.max_node_provision_time)}",
            f"--max-node-startup-time={go_duration(s.max_node_provision_time)}",
            f"--v={s.verbosity}", *s.extra_args]


def ca_env(base: dict[str, str], kubeconfig: str, namespace: str = REAL_CA_NAMESPACE) -> dict[str, str]:
    env = dict(base)
    env.update(KUBECONFIG=kubeconfig, KWOK_PROVIDER_MODE="local", POD_NAMESPACE=namespace)
    env.pop("KWOK_PROVIDER_CONFIGMAP", None)        # always the default name, which we write
    return env


def kubeconfig_target(path: str | None, context: str | None) -> tuple[str, str]:
    """(absolute kubeconfig path, server URL of its current context).  The CA has no --context flag and
    its kwok provider reads $KUBECONFIG: both must resolve to the cluster every check here looks at."""
    if not path:
        raise RealCAError("no kubeconfig: run `tau-demo cluster up` or pass --kubeconfig (the CA and its kwok "
                          "provider both need the file)")
    p = Path(path).expanduser().resolve()
    try:
        cfg = yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise RealCAError(f"cannot read kubeconfig {p}: {e}") from e
    current = cfg.get("current-context")
    if context and context != current:
        raise RealCAError(f"--context {context} is not the current-context ({current}) of {p}: the cluster-autoscaler "
                          "has no --context flag and would act on the current one")
    ctx = next((c.get("context") or {} for c in cfg.get("contexts") or [] if c.get("name") == current), {})
    server = next(((c.get("cluster") or {}).get("server") for c in cfg.get("clusters") or []
                   if c.get("name") == ctx.get("cluster")), None)
    if not server:
        raise RealCAError(f"kubeconfig {p}: current-context {current!r} names no cluster server")
    return str(p), server


def main_loops_metric(text: str) -> float | None:
    """The value of cluster_autoscaler_last_activity{activity="mainSuccessful"} (unix time of the last
    main loop that succeeded), None before the first one."""
    name, labels = CA_MAIN_LOOP_METRIC
    return metrics.value(text, name, **labels)


def proc_environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


class RealCA:
    def __init__(self, k: Kube, kubeconfig: str, pools: list[Pool], settings: Settings, binary: Path,
                 log_file: Path, namespace: str = REAL_CA_NAMESPACE):
        self.k, self.kubeconfig, self.pools, self.s = k, kubeconfig, pools, settings
        self.binary, self.log_file, self.namespace = binary, log_file, namespace
        self.child: subprocess.Popen | None = None
        self.metrics_port = 0

    # ------------------------------------------------------------------ before the start
    def check(self) -> None:
        # the cluster first, like the other controllers: a cluster that is down is the problem to report
        # even where the CA was never built
        if self.k.get_or_none(CONFIG_MAP, MARKER[1], MARKER[0]) is None:
            raise RealCAError(f"ConfigMap {MARKER[0]}/{MARKER[1]} is missing: not a cluster made by "
                              "`tau-demo cluster up` nor attached with `tau-demo cluster attach --autoscaler fake`; the real CA would "
                              "create nodes here")
        if not self.binary.is_file():
            raise RealCAError(f"{self.binary} is missing: run `tau-demo toolchain ensure --with-real-ca`")
        why = exclusion.fake_running(self.k)
        if why:
            raise RealCAError(why)
        if heartbeat.alive(self.k, REAL_CA_LEASE):
            raise RealCAError(f"another `tau-demo real-ca` is running (Lease {SYSTEM_NAMESPACE}/{REAL_CA_LEASE})")
        left = coexist.real_nodes(self.k.list(NODE)[0])
        if left:
            log.warning("real-ca: pool nodes from an earlier run are still there (%s); the CA adopts them",
                        ", ".join(left))

    def publish(self) -> None:
        table = pools_to_configmap(self.pools)
        self.k.apply(CONFIG_MAP, table, field_manager=REAL_CA_FIELD_MANAGER)
        for cm in provider.configmaps(self.pools, self.namespace):
            self.k.apply(CONFIG_MAP, cm, field_manager=REAL_CA_FIELD_MANAGER)
        log.info("real-ca: published pool table %s/%s and the kwok provider ConfigMaps: %s",
                 table["metadata"]["namespace"], table["metadata"]["name"],
                 ", ".join(f"{p.name} ({p.min_nodes}..{p.max_nodes} nodes)" for p in self.pools))

    # ------------------------------------------------------------------ the child
    def start(self) -> None:
        self.metrics_port = free_port()
        argv = [str(self.binary), *ca_args(self.kubeconfig, self.s, self.metrics_port, self.namespace)]
        env = ca_env(dict(os.environ), self.kubeconfig, self.namespace)
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as out:
            out.write(f"\n===== {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
            out.flush()
            self.child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        seen = proc_environ(self.child.pid).get("KUBECONFIG")
        if seen is not None and seen != self.kubeconfig:
            self.child.kill()
            raise RealCAError(f"the CA's KUBECONFIG is {seen}, not --kubeconfig {self.kubeconfig}")
        log.info("real-ca: started cluster-autoscaler pid %d (scan interval %s, metrics 127.0.0.1:%d, log %s)",
                 self.child.pid, go_duration(self.s.scan_interval), self.metrics_port, self.log_file)

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def last_main_loop(self) -> float | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2) as r:
                return main_loops_metric(r.read().decode(errors="replace"))
        except OSError:
            return None

    def wait_ready(self, stop: threading.Event, timeout: float) -> bool:
        def looped() -> float | None:
            if self.child.poll() is not None:
                raise RealCAError(f"cluster-autoscaler exited with {self.child.returncode} during start-up; "
                                  f"last lines of {self.log_file}:\n{self.log_tail()}")
            return self.last_main_loop()
        if poll.eventually(looped, timeout, 0.3, done=lambda t: t or stop.is_set(), sleep=stop.wait) and \
                not stop.is_set():
            return True
        if stop.is_set():
            return False
        raise RealCAError(f"cluster-autoscaler ran no main loop within {timeout:.0f}s; last lines of "
                          f"{self.log_file}:\n{self.log_tail()}")

    def stop_child(self, timeout: float = 20.0) -> int | None:
        if self.child is None:
            return None
        if self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)   # its clean-up deletes the status ConfigMap and its nodes
            try:
                self.child.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("real-ca: cluster-autoscaler did not exit within %.0fs of SIGTERM; killing it", timeout)
                self.child.kill()
                self.child.wait(5)
        return self.child.returncode

    def remove_leftover_status(self) -> bool:
        """The CA's status ConfigMap, if it is still there once the CA has exited: its clean-up deletes it,
        but a loop that was running when the signal came may write it again after that (a test found one left
        after a clean exit), and a stale one would keep `tau-demo fake-ca` refusing for a minute."""
        try:
            gone = self.k.delete(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0])
        except (ApiError, Unreachable) as e:
            log.warning("real-ca: cannot delete %s/%s: %s", CA_STATUS[0], CA_STATUS[1], e)
            return False
        if gone:
            log.info("real-ca: deleted the status ConfigMap %s/%s the CA left behind", CA_STATUS[0], CA_STATUS[1])
        return gone

    def remove_leftover_nodes(self, wait: float = 5.0) -> list[str]:
        """Pool nodes the CA did not delete on its way out (it was killed, or crashed): delete them."""
        try:
            left = poll.eventually(lambda: coexist.real_nodes(self.k.list(NODE)[0]), wait, 0.3, done=lambda n: not n)
        except (ApiError, Unreachable) as e:
            log.warning("real-ca: cannot list nodes to check the clean-up: %s", e)
            return []
        for n in left:
            try:
                self.k.delete(NODE, n)
            except (NotFound, ApiError, Unreachable) as e:
                log.warning("real-ca: deleting %s: %s", n, e)
        if left:
            log.info("real-ca: deleted %d node(s) the CA left behind: %s", len(left), ", ".join(left))
        return left

    # ------------------------------------------------------------------ run
    def run(self, stop: threading.Event, ready_timeout: float = 120.0) -> int:
        """Run until stop is set (0) or the CA exits on its own (RealCAError)."""
        self.check()
        self.publish()
        self.start()
        hb_stop = threading.Event()
        hb = None
        try:
            if not self.wait_ready(stop, ready_timeout):
                return 0
            log.info("real-ca: first main loop done; watching ProvisioningRequests (pool label %s)", POOL_LABEL)
            hb = heartbeat.start(self.k, REAL_CA_LEASE, hb_stop)
            log.info("real-ca: caches synced; ready")
            while not stop.is_set():
                if self.child.poll() is not None:
                    raise RealCAError(f"cluster-autoscaler exited with {self.child.returncode}; last lines of "
                                      f"{self.log_file}:\n{self.log_tail()}")
                stop.wait(0.5)
            return 0
        finally:
            hb_stop.set()
            if hb is not None:
                heartbeat.give_up(hb)
            code = self.stop_child()
            log.info("real-ca: cluster-autoscaler exited (%s)", code)
            self.remove_leftover_nodes()
            self.remove_leftover_status()
