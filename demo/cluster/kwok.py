"""kwok backend: a kwokctl `--runtime binary` control plane plus Kueue v0.19.2 as a host process.

Order matters: control plane → ProvisioningRequest CRD → Kueue
namespace and CRDs → certificates → Kueue process → /readyz → webhook configurations →
demo objects.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

import yaml

from k8s import poll
from k8s.client import Kube
from k8s.keys import APP_NAME_LABEL, DEMO_TAUCLUSTER, KUEUE_NAMESPACE
from k8s.paths import MANIFESTS
from k8s.resources import KWOKCTL_CONFIGURATION
from ..toolchain import versions
from ..toolchain.components import KUEUE_MANIFESTS, bin_path, path_dirs, share_path
from . import install, kueue_manifests, procs, setup
from .backend import UpOptions
from .state import ClusterError, State, remove_state
from .tools import apply_docs, kubectl, run_tool

AUDIT_POLICY = MANIFESTS / "kwok" / "audit-policy.yaml"

# Kueue v0.19.2 hard-codes these paths when internal cert management is off (cmd/kueue/main.go).
KUEUE_FIXED_CERT_DIRS = (Path("/etc/kueue/metrics/certs"),)


def _say(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


KWOKCTL_CREATE_LOCK = "kwokctl-create"


def kwok_env(st: State) -> dict[str, str]:
    env = dict(os.environ)
    env["KWOK_WORKDIR"] = str(st.dir / "kwok")
    env["PATH"] = os.pathsep.join(path_dirs() + [env.get("PATH", "")])
    env["KWOK_KUBECTL_BINARY"] = str(bin_path("kubectl"))
    env.setdefault("NO_PROXY", "127.0.0.1,localhost")
    return env


def kwok_cluster_dir(st: State) -> Path:
    return st.dir / "kwok" / "clusters" / st.name


def audit_log(st: State) -> Path:
    """The apiserver's audit log (what AUDIT_POLICY records), one JSON event per line."""
    return kwok_cluster_dir(st) / "logs" / "audit.log"


def kwokctl_config(apiserver_port: int) -> list[dict]:
    """The KwokctlConfiguration plus every Stage (supplying any Stage drops kwok's defaults)."""
    b = bin_path
    options = {
        "runtime": "binary", "bindAddress": "127.0.0.1", "kubeVersion": versions.KUBERNETES,
        "kubeApiserverBinary": str(b("kube-apiserver")), "kubeControllerManagerBinary": str(b("kube-controller-manager")),
        "kubeSchedulerBinary": str(b("kube-scheduler")), "kubectlBinary": str(b("kubectl")),
        "kwokControllerBinary": str(b("kwok")), "etcdBinary": str(b("etcd")), "disableQPSLimits": True,
        # writes to TauClusters and the profiles' Kueue objects, and every write of the TauCluster controller
        "kubeAuditPolicy": str(AUDIT_POLICY),
    }
    if apiserver_port:
        options["kubeApiserverPort"] = apiserver_port
    # disableQPSLimits lifts the components' client-side rate limits, and kwokctl turns the apiserver's
    # API Priority and Fairness off with them (unlimited in-flight requests): switched back on at the
    # apiserver's defaults, as on a real cluster, so it answers an overloaded flow 429 with Retry-After
    # (tests/cluster/test_client_retry.py)
    apf = [{"key": "enable-priority-and-fairness", "value": "true"},
           {"key": "max-requests-inflight", "value": "400"}, {"key": "max-mutating-requests-inflight", "value": "200"}]
    # the controller manager and the scheduler elect a leader by default and exit once they cannot renew their lease
    # for 10 s (an apiserver down that long, as tests/cluster/test_faults.py keeps it); a kubelet restarts such a
    # static pod, but nothing restarts a process of the binary runtime: one of each runs, so none elects
    alone = [{"key": "leader-elect", "value": "false"}]
    docs: list[dict] = [KWOKCTL_CONFIGURATION.doc(options=options, componentsPatches=[
        {"name": "kube-apiserver", "extraArgs": [{"key": "advertise-address", "value": "127.0.0.1"}, *apf]},
        {"name": "kube-controller-manager", "extraArgs": alone}, {"name": "kube-scheduler", "extraArgs": alone}])]
    return docs + install.kwok_stage_docs()


def _kwokctl(st: State, *args: str, check: bool = True, timeout: float = 600):
    return run_tool("kwokctl", *args, env=kwok_env(st), check=check, timeout=timeout, shown_args=len(args))


def control_plane_running(st: State) -> bool:
    d = kwok_cluster_dir(st) / "pids"
    return d.is_dir() and all(procs.read_plain_pid(p) is not None for p in d.glob("*.pid")) and any(d.glob("*.pid"))


# ---------------------------------------------------------------------------- Kueue process

def kueue_pidfile(st: State) -> Path:
    return st.dir / "kueue" / "kueue.pid"


def kueue_log(st: State) -> Path:
    return st.dir / "kueue" / "kueue.log"


def kueue_ready(st: State) -> bool:
    port = st.ports.get("kueue_health")
    if not port or procs.read_pid(kueue_pidfile(st)) is None:
        return False
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _install_certs(st: State) -> tuple[Path, Path | None]:
    """The cluster's admin certificate where its Kueue reads its serving certificates: the webhook's directory
    (configurable), and the metrics one.  A plain cluster writes the fixed path every cluster on the machine
    shares; a MultiKueue cluster (three Kueues on one machine) gets a directory of its own, which its Kueue sees
    at the fixed path in a mount namespace of its own (start_kueue).  (webhook dir, private metrics dir or None)"""
    pki = kwok_cluster_dir(st) / "pki"
    webhook_dir = st.dir / "kueue" / "webhook-certs"
    private = st.dir / "kueue" / "metrics-certs" if st.role else None
    targets = [webhook_dir, private] if private else [webhook_dir, *KUEUE_FIXED_CERT_DIRS]
    for d in [*targets, *(KUEUE_FIXED_CERT_DIRS if private else ())]:
        try:
            d.mkdir(parents=True, exist_ok=True)       # a private one's mount point must exist
            if d not in targets:
                continue
            for src, dst in (("admin.crt", "tls.crt"), ("admin.key", "tls.key"), ("ca.crt", "ca.crt")):
                (d / dst).write_bytes((pki / src).read_bytes())
        except PermissionError as e:
            raise ClusterError(
                f"cannot write {d}: Kueue v0.19.2 outside a pod reads its metrics certificate from that fixed path "
                "(cmd/kueue/main.go) and exits without it. Run `tau-demo cluster up` as root, or use --backend kind."
            ) from e
    return webhook_dir, private


def kueue_argv(st: State, cfg_path: Path, private_metrics: Path | None) -> list[str]:
    """Kueue's command line.  With a private metrics directory: in a mount namespace of its own (unshare, root)
    where that directory is bind-mounted over the fixed /etc/kueue/metrics/certs, so each of several Kueues on
    one machine serves its own cluster's certificate and none sees another cluster rewrite the shared files
    (Kueue's certwatcher reloads them).  The process keeps its pid: unshare and the shell exec into Kueue."""
    argv = [str(bin_path("kueue")), f"--config={cfg_path}", f"--kubeconfig={st.kubeconfig}", "--zap-log-level=info"]
    if private_metrics is None:
        return argv
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            'mount --bind "$1" "$2" && shift 2 && exec "$@"', "kueue-metrics-certs", str(private_metrics),
            str(KUEUE_FIXED_CERT_DIRS[0]), *argv]


def start_kueue(st: State, plan: kueue_manifests.Plan) -> None:
    cert_dir, private_metrics = _install_certs(st)
    if "kueue_metrics" not in st.ports:          # a cluster made before Kueue served its metrics
        st.ports["kueue_metrics"] = procs.free_port()
        st.save()
    cfg = kueue_manifests.manager_config(plan.manager_config, webhook_port=st.ports["kueue_webhook"],
                                       health_port=st.ports["kueue_health"], cert_dir=str(cert_dir),
                                       metrics_port=st.ports["kueue_metrics"])
    cfg_path = st.dir / "kueue" / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    for name in ("kueue_webhook", "kueue_health", "kueue_metrics"):
        port = st.ports[name]
        if not procs.port_free(port):
            raise ClusterError(f"port {port} for Kueue ({name}) is in use {procs.port_owner(port)}; "
                               "run `tau-demo cluster down` and `up` again to pick new ports")
    env = dict(os.environ, NAMESPACE=KUEUE_NAMESPACE)
    procs.spawn(kueue_argv(st, cfg_path, private_metrics), kueue_pidfile(st), kueue_log(st), env=env)

    def ready() -> bool:
        if procs.read_pid(kueue_pidfile(st)) is None:
            tail = "\n".join(kueue_log(st).read_text(errors="replace").splitlines()[-15:])
            raise ClusterError(f"Kueue exited during start-up; last log lines ({kueue_log(st)}):\n{tail}")
        return kueue_ready(st)
    if poll.eventually(ready, 120, 0.5):
        return
    raise ClusterError(f"Kueue did not report ready within 120s; see {kueue_log(st)}")


def kueue_plan(st: State) -> kueue_manifests.Plan:
    raw = share_path(KUEUE_MANIFESTS, "kueue-manifests.yaml")
    docs = [d for d in yaml.safe_load_all(raw.read_text()) if d]
    ca = (kwok_cluster_dir(st) / "pki" / "ca.crt").read_bytes()
    return kueue_manifests.install_plan(docs, ca, st.ports["kueue_webhook"])


# ---------------------------------------------------------------------------- up / down / status

def _up(name: str, options: UpOptions, role: str = "", demo_objects: bool = True) -> State:
    """Create or repair cluster `name`.  role: "" for the demo cluster, or its MultiKueue role (multikueue_kwok.py);
    demo_objects=False leaves the demo's Kueue objects to the caller (the MultiKueue manager's are its own)."""
    apiserver_port = options.apiserver_port
    st = State.load(name)
    if st and control_plane_running(st):
        _say(f"control plane {name} already running")
    else:
        if st:   # stale state from a crash or reboot: start over
            _say("found stale cluster state; cleaning it up first")
            _down(name)
        st = State(name=name, backend="kwok", kubeconfig="", role=role,
                   ports={"kueue_webhook": procs.free_port(), "kueue_health": procs.free_port(),
                          "kueue_metrics": procs.free_port()})
        st.kubeconfig = str(kwok_cluster_dir(st) / "kubeconfig.yaml")
        st.dir.mkdir(parents=True, exist_ok=True)
        cfg = st.dir / "kwokctl.yaml"
        cfg.write_text(yaml.safe_dump_all(kwokctl_config(apiserver_port), sort_keys=False))
        st.save()
        _say(f"creating control plane (kwokctl --runtime binary, Kubernetes {versions.KUBERNETES}, etcd {versions.ETCD})")
        t0 = time.monotonic()
        # kwokctl picks each component's port by scanning down from 32767 for one free at that moment, so two
        # creates at once pick the same ports and one cluster's components cannot bind: one create at a time
        with procs.machine_lock(KWOKCTL_CREATE_LOCK, waiting=lambda: _say(
                "waiting for another kwokctl create on this machine to finish (it picks the same free ports)")):
            _kwokctl(st, "--config", str(cfg), "create", "cluster", "--name", name, "--runtime", "binary",
                     "--kubeconfig", "", "--timeout", "5m", "--wait", "2m")
        _say(f"control plane up in {time.monotonic() - t0:.1f}s")
    k = Kube(st.kubeconfig)
    install.wait_apiserver(k)
    if not kueue_ready(st):
        install.install_provreq_crd(st.kubeconfig)
        plan = kueue_plan(st)
        apply_docs(st.kubeconfig, plan.phase1, "Kueue's namespace and CRDs")
        install.wait_established(st.kubeconfig, selector=f"{APP_NAME_LABEL}=kueue")
        procs.stop(kueue_pidfile(st))
        _say(f"starting Kueue {versions.KUEUE} (host process, webhook 127.0.0.1:{st.ports['kueue_webhook']})")
        start_kueue(st, plan)
        apply_docs(st.kubeconfig, plan.webhooks, "Kueue's webhook configurations")
        _say(f"Kueue ready; {len(plan.dropped_webhooks)} webhooks for unused frameworks left out")
    if demo_objects:
        install.install_demo_objects(st.kubeconfig, "kwok")
        st.setup = DEMO_TAUCLUSTER
        st.save()
        setup.set_up(st, say=_say)
        install.wait_kueue_objects(k)
    return st


def _down(name: str) -> bool:
    """Stop everything of cluster `name` and remove its state.  False if there was nothing."""
    st = State.load(name)
    if st is None:
        return False
    # webhooks first: with failurePolicy Fail they would block the apiserver's own cleanup
    if Path(st.kubeconfig).is_file() and control_plane_running(st):
        for kind in ("validatingwebhookconfiguration", "mutatingwebhookconfiguration"):
            kubectl(st.kubeconfig, "delete", kind, "-l",  f"{APP_NAME_LABEL}=kueue",
                            "--ignore-not-found", "--timeout=20s", check=False, timeout=30)
    for pidfile in sorted(st.dir.glob("*/*.pid")) + sorted(st.dir.glob("*.pid")):
        if "kwok/clusters" not in str(pidfile) and procs.stop(pidfile):
            _say(f"stopped {pidfile.stem}")
    if kwok_cluster_dir(st).exists():
        _kwokctl(st, "delete", "cluster", "--name", name, check=False, timeout=120)
        # kwokctl stops by pid file; make sure nothing it started survives
        for pidfile in (kwok_cluster_dir(st) / "pids").glob("*.pid"):
            pid = procs.read_plain_pid(pidfile)
            if pid:
                os.kill(pid, signal.SIGKILL)
    remove_state(name)
    return True


def _status(name: str) -> list[tuple[str, bool, str]]:
    st = State.load(name)
    if st is None:
        return [("cluster", False, f"no cluster {name}; run `tau-demo cluster up`")]
    rows = []
    pids = kwok_cluster_dir(st) / "pids"
    for p in sorted(pids.glob("*.pid")):
        pid = procs.read_plain_pid(p)
        rows.append((p.stem, pid is not None, f"pid {pid}" if pid else "not running"))
    pid = procs.read_pid(kueue_pidfile(st))
    rows.append(("kueue", kueue_ready(st), f"pid {pid}, /readyz on 127.0.0.1:{st.ports.get('kueue_health')}"
                 if pid else f"not running (log {kueue_log(st)})"))
    if st.setup:
        rows.append(setup.controller_row(st))
    return rows


def restart_process(st: State, component: str, timeout: float = 60, while_down: Callable[[], None] | None = None) -> None:
    """SIGKILL a control-plane process kwokctl started, then start it again exactly as it was (its argv,
    working directory and environment, read from /proc), appending to its log; kwokctl's pid file is
    updated so that `cluster down` still finds it.  `while_down()` runs once it is dead, before the start."""
    pidfile = kwok_cluster_dir(st) / "pids" / f"{component}.pid"
    pid = procs.read_plain_pid(pidfile)
    if pid is None:
        raise ClusterError(f"{component} of cluster {st.name} is not running")
    proc = Path(f"/proc/{pid}")
    argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
    cwd = os.readlink(proc / "cwd")
    env = dict(e.decode().split("=", 1) for e in (proc / "environ").read_bytes().split(b"\0") if b"=" in e)
    ports = [int(a.split("=", 1)[1]) for a in argv if a.startswith("--secure-port=")]
    os.kill(pid, signal.SIGKILL)
    poll.eventually(lambda: procs.read_plain_pid(pidfile) is None and all(procs.port_free(p) for p in ports), 30, 0.05)
    if while_down:
        while_down()
    logfile = kwok_cluster_dir(st) / "logs" / f"{component}.log"
    with open(logfile, "ab") as log:
        new = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    pidfile.write_text(str(new.pid))        # no newline: kwokctl reads it with strconv.Atoi, unTrimmed
    if component == "kube-apiserver":
        install.wait_apiserver(Kube(st.kubeconfig), timeout)
    gone = sorted(p.stem for p in (kwok_cluster_dir(st) / "pids").glob("*.pid") if procs.read_plain_pid(p) is None)
    if gone:        # nothing restarts a process of the binary runtime: the cluster would stay without it
        raise ClusterError(f"{', '.join(gone)} of cluster {st.name} exited while {component} was restarted "
                           f"(logs in {kwok_cluster_dir(st) / 'logs'})")


def restart_kueue(st: State) -> None:
    procs.stop(kueue_pidfile(st), timeout=0, sig=signal.SIGKILL)
    start_kueue(st, kueue_plan(st))


class KwokBackend:
    """kwokctl --runtime binary control plane; Kueue v0.19.2 as a host process."""
    name = "kwok"
    toolchain = ("kwok",)

    def check(self, name: str, options: UpOptions) -> None:
        st = State.load(name)
        if st and st.backend != "kwok":
            raise ClusterError(f"cluster {name} exists with backend {st.backend}; run `tau-demo cluster down` first")
        port = options.apiserver_port
        if port and not (st and control_plane_running(st)) and not procs.port_free(port):
            raise ClusterError(f"apiserver port {port} is already in use {procs.port_owner(port)}. "
                               "Free it, choose another with --apiserver-port, or pass --apiserver-port 0 for a free one.")

    def up(self, name: str, options: UpOptions) -> State:
        self.check(name, options)
        return _up(name, options, demo_objects=not options.bare)

    def down(self, name: str) -> bool:
        return _down(name)

    def status(self, name: str) -> list[tuple[str, bool, str]]:
        return _status(name)

    def restart(self, name: str, component: str, while_down: Callable[[], None] | None = None) -> None:
        st = State.load(name)
        if st is None:
            raise ClusterError(f"no cluster {name}")
        if component == "kueue":
            restart_kueue(st)
        elif component == "kube-apiserver":
            restart_process(st, component, while_down=while_down)
        else:
            raise ClusterError(f"cannot restart {component!r}")


BACKEND = KwokBackend()
