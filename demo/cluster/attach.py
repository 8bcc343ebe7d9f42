"""`tau-demo cluster attach`: take on a cluster the harness did not build, in Adopt or External mode.

An administrator built the cluster (`kind create cluster`, a cloud's console) and installed Kueue v0.19.2 with the
ProvisioningRequest CRD; in Adopt or External mode the profiles' Kueue objects are theirs too (kubectl apply, Helm).
Attaching writes only what `attach_plan()` lists, and records what it created so that `cluster down` removes exactly that
and never the cluster: the TauCluster CRD and the namespace tau-demo-system where missing, the TauCluster, and with
`--autoscaler fake` (a KWOK cluster only: never where a real Cluster Autoscaler makes real nodes) the marker that
lets the fake autoscaler create KWOK nodes.  The TauCluster controller then runs on this machine with the
kubeconfig's own identity (no RBAC object is written): in Adopt mode it adds its labels to the compatible objects of
the profiles and nothing else; in External mode it writes nothing but the TauCluster's status.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from k8s import crd, poll
from k8s.client import Kube
from k8s.errors import ApiError, NotFound, Unreachable
from k8s.keys import MANAGED_BY_LABEL, MARKER, MODE_ADOPT, MODE_EXTERNAL, SYSTEM_NAMESPACE
from k8s.manifests import ManifestError, load_manifest
from k8s.objects import Obj, meta, name as name_of, spec
from k8s.paths import MANIFESTS, shown
from k8s.resources import CLUSTER_QUEUE, CONFIG_MAP, CRD, KUBECONFIG, NAMESPACE, PROVREQ, TAUCLUSTER
from . import procs, setup
from .state import ClusterError, State, remove_state

ATTACH_MODES = (MODE_ADOPT, MODE_EXTERNAL)  # Manage is `cluster up`'s: it makes the objects on a cluster it built
ATTACH_AUTOSCALERS = ("none", "fake")
DEFAULT_TAUCLUSTER = MANIFESTS / "taucluster-demo.yaml"
CRD_FILE = MANIFESTS / "taucluster-crd.yaml"
BACKEND_NAME = "attached"
# what attach created, so that `cluster down` removes exactly that (State.wrote)
MADE_CRD, MADE_NAMESPACE, MADE_MARKER, MADE_TAUCLUSTER = "crd", "namespace", "marker", "taucluster"
RELEASE_TIMEOUT = 60.0


class AttachError(ClusterError):
    """The cluster cannot be attached (or detached); the message says why and what to do."""


# ---------------------------------------------------------------------------- pure

def parse_mode(text: str) -> str:
    """adopt / Adopt / EXTERNAL -> the CRD's spelling; AttachError otherwise."""
    for m in ATTACH_MODES:
        if text.strip().lower() == m.lower():
            return m
    raise AttachError(f"--mode {text!r}: attach takes one of {', '.join(m.lower() for m in ATTACH_MODES)} "
                      "(Manage makes the objects itself: that is `tau-demo cluster up`, on a cluster it builds)")


def with_mode(tc: Obj, mode: str) -> Obj:
    """The TauCluster to write: the file's, in the chosen mode, without anything the apiserver owns."""
    out = copy.deepcopy(tc)
    out["spec"]["mode"] = mode
    md = out["metadata"]
    for k in ("resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "finalizers"):
        md.pop(k, None)
    out.pop("status", None)
    return out


@dataclass(frozen=True)
class AttachPlan:
    will: list[str]            # what attach writes, one line each
    wont: list[str]            # what it leaves alone, one line each


def attach_plan(tc: Obj, have_crd: bool, have_namespace: bool, have_marker: bool, fake_autoscaler: bool) -> AttachPlan:
    """What attaching writes and does not write, said before anything is written (pure)."""
    mode = spec(tc).get("mode")
    profiles = [p.get("name") for p in spec(tc).get("profiles") or [] if isinstance(p, dict)]
    will = []
    if not have_crd:
        will.append(f"create the CustomResourceDefinition {TAUCLUSTER.crd_name} (cluster-scoped; removed again by `cluster down`)")
    if not have_namespace:
        will.append(f"create the namespace {SYSTEM_NAMESPACE} (the controllers' heartbeat Leases; removed again by "
                    "`cluster down`)")
    will.append(f"create or update TauCluster {name_of(tc)} in {mode} mode, profiles {', '.join(map(str, profiles))}")
    if mode == MODE_ADOPT:
        will.append("adopt each compatible Kueue object of those profiles: add the labels tau-demo.io/taucluster and "
                    "tau-demo.io/profile and the annotation tau-demo.io/adopted, nothing else (an incompatible one is "
                    "reported in the TauCluster's status with the fields that differ, and left as it is)")
    else:
        will.append("write the TauCluster's status, and nothing else: the profiles' Kueue objects are only read")
    if fake_autoscaler:
        will.append(f"create the ConfigMap {MARKER[0]}/{MARKER[1]} (if missing): the fake autoscaler then creates "
                    "KWOK nodes here; it publishes its pool table in the same namespace, and writes what an autoscaler "
                    "writes: nodes, the ProvisioningRequests' status and kube-system/cluster-autoscaler-status")
    wont = ["create, change or delete any Kueue object (Adopt: only the labels above), Namespace of yours, Node, "
            "RBAC object or webhook",
            "install or restart Kueue, KWOK or an autoscaler in the cluster (the controllers run on this machine, "
            "with this kubeconfig's identity)"]
    if not fake_autoscaler:
        wont.append("let the fake autoscaler create nodes (its marker is not written): the cluster's own autoscaler "
                    "answers the ProvisioningRequests")
    if have_marker and not fake_autoscaler:
        wont.append(f"remove the marker {MARKER[0]}/{MARKER[1]} that is already there")
    return AttachPlan(will, wont)


def minified(doc: Obj, context: str | None, base: Path) -> Obj:
    """The kubeconfig of one context, standalone: its cluster and user only, files it names read in (as
    `kubectl config view --minify --flatten`).  AttachError for a context or entry that is not there."""
    if not isinstance(doc, dict):
        raise AttachError("the kubeconfig is not a kubeconfig (not a YAML mapping)")
    ctx_name = context or doc.get("current-context")
    if not ctx_name:
        raise AttachError("the kubeconfig has no current-context: give --context")

    def entry(section: str, name: str) -> Obj:
        for e in doc.get(section) or []:
            if isinstance(e, dict) and e.get("name") == name:
                return copy.deepcopy(e)
        raise AttachError(f"the kubeconfig has no {section[:-1]} named {name!r} "
                          f"(it has: {', '.join(str(e.get('name')) for e in doc.get(section) or [] if isinstance(e, dict)) or 'none'})")
    ctx = entry("contexts", ctx_name)
    cl = entry("clusters", (ctx.get("context") or {}).get("cluster", ""))
    user = entry("users", (ctx.get("context") or {}).get("user", ""))
    for body, key in ((cl.get("cluster") or {}, "certificate-authority"), (user.get("user") or {}, "client-certificate"),
                      (user.get("user") or {}, "client-key")):
        if body.get(key):
            path = Path(body.pop(key)).expanduser()
            path = path if path.is_absolute() else base / path
            try:
                body[f"{key}-data"] = base64.b64encode(path.read_bytes()).decode()
            except OSError as e:
                raise AttachError(f"the kubeconfig's {key} {path} cannot be read: {e.strerror}") from e
    return KUBECONFIG.doc(clusters=[cl], users=[user], contexts=[ctx], **{"current-context": ctx_name})


# ---------------------------------------------------------------------------- I/O

def read_taucluster(path: Path) -> Obj:
    try:
        docs = load_manifest(path)
    except ManifestError as e:
        raise AttachError(str(e)) from e
    tcs = [d for d in docs if d.get("kind") == TAUCLUSTER.kind]
    if len(tcs) != 1:
        raise AttachError(f"{shown(path)}: holds {len(tcs)} TauClusters; give a file with exactly one")
    return tcs[0]


def _exists(k: Kube, res, name: str, namespace: str | None = None) -> bool:
    return k.get_or_none(res, name, namespace) is not None


def preconditions(k: Kube) -> None:
    """Kueue and the ProvisioningRequest API must be there already: attach installs neither."""
    for crd_name, what in ((CLUSTER_QUEUE.crd_name, "Kueue v0.19.2"),
                           (PROVREQ.crd_name, "the ProvisioningRequest API (autoscaling.x-k8s.io/v1)")):
        if not _exists(k, CRD, crd_name):
            raise AttachError(f"{what} is not installed in this cluster (no CRD {crd_name}): install it first, as its "
                              "administrator (docs/taucluster.md, \"Attach your own cluster\"); attach installs nothing")


def look(kubeconfig: str, context: str | None, tc_file: Path, mode: str, fake_autoscaler: bool) -> tuple[Kube, Obj, AttachPlan]:
    """Connect, check, and say what attaching would write; nothing is written."""
    try:
        k = Kube(kubeconfig, context)
        k.raw("/readyz")
        tc = with_mode(read_taucluster(tc_file), mode)
        preconditions(k)
        have_marker = _exists(k, CONFIG_MAP, MARKER[1], MARKER[0])
        p = attach_plan(tc, _exists(k, CRD, TAUCLUSTER.crd_name), _exists(k, NAMESPACE, SYSTEM_NAMESPACE), have_marker, fake_autoscaler)
    except (Unreachable, ApiError) as e:
        raise AttachError(f"the cluster does not answer as it should: {e}") from e
    return k, tc, p


def attach(name: str, kubeconfig: str, context: str | None, tc_file: Path, mode: str, fake_autoscaler: bool,
           say: Callable[[str], None]) -> State:
    """Attach: write what attach_plan() said, start the TauCluster controller, wait until its status is current."""
    st = State.load(name)
    if st is not None and not st.attached:
        raise AttachError(f"cluster {name} is one `cluster up` built; attach another under --name, or take this one "
                          "down first")
    k, tc, _ = look(kubeconfig, context, tc_file, mode, fake_autoscaler)
    try:
        raw = yaml.safe_load(Path(kubeconfig).expanduser().read_text())
    except (OSError, yaml.YAMLError) as e:
        raise AttachError(f"cannot read the kubeconfig {kubeconfig}: {e}") from e
    st = st or State(name=name, backend=BACKEND_NAME, kubeconfig="", attached=True)
    st.mode, st.setup = mode, name_of(tc)
    st.dir.mkdir(parents=True, exist_ok=True)
    copy_path = st.dir / "kubeconfig.yaml"
    copy_path.write_text(yaml.safe_dump(minified(raw, context, Path(kubeconfig).expanduser().resolve().parent)))
    copy_path.chmod(0o600)
    st.kubeconfig = str(copy_path)
    st.save()
    try:
        _write(k, st, tc, fake_autoscaler, say)
    except (Unreachable, ApiError) as e:
        raise AttachError(f"writing to the cluster failed: {e} (what was written so far is in {shown(st.dir)}; "
                          "`tau-demo cluster down` removes it)") from e
    if setup.start_controller(st, impersonate=False):
        say(f"started the TauCluster controller (log {shown(setup.controller_files(st)[1])})")
    wait_current(k, st)
    return st


def _write(k: Kube, st: State, tc: Obj, fake_autoscaler: bool, say: Callable[[str], None]) -> None:
    def made(what: str) -> None:
        if what not in st.wrote:
            st.wrote.append(what)
            st.save()
    if not _exists(k, CRD, TAUCLUSTER.crd_name):
        k.create(CRD, load_manifest(CRD_FILE)[0])
        made(MADE_CRD)
        poll.until(lambda: crd.established(k.get(CRD, TAUCLUSTER.crd_name)), 60,
                   f"CRD {TAUCLUSTER.crd_name} to be Established")
        say(f"created the CRD {TAUCLUSTER.crd_name}")
    if not _exists(k, NAMESPACE, SYSTEM_NAMESPACE):
        k.create(NAMESPACE, NAMESPACE.new(SYSTEM_NAMESPACE, labels={MANAGED_BY_LABEL: "tau-demo"}))
        made(MADE_NAMESPACE)
        say(f"created the namespace {SYSTEM_NAMESPACE}")
    if fake_autoscaler and not _exists(k, CONFIG_MAP, MARKER[1], MARKER[0]):
        k.create(CONFIG_MAP, CONFIG_MAP.new(MARKER[1], MARKER[0], labels={MANAGED_BY_LABEL: "tau-demo"}, data={
            "backend": BACKEND_NAME, "purpose": "capacity-provisioning-demo: fake nodes may be created here"}), MARKER[0])
        made(MADE_MARKER)
        say(f"created the marker {MARKER[0]}/{MARKER[1]}: the fake autoscaler may create KWOK nodes here")
    have = k.get_or_none(TAUCLUSTER, name_of(tc))
    if have is None:
        k.create(TAUCLUSTER, tc)
        made(MADE_TAUCLUSTER)
        say(f"created TauCluster {name_of(tc)} ({spec(tc).get('mode')} mode)")
    else:
        k.patch(TAUCLUSTER, name_of(tc), {"spec": spec(tc)}, resource_version=meta(have).get("resourceVersion"))
        made(MADE_TAUCLUSTER)
        say(f"updated TauCluster {name_of(tc)} ({spec(have).get('mode')} -> {spec(tc).get('mode')} mode)")


def wait_current(k: Kube, st: State, timeout: float = setup.READY_TIMEOUT) -> None:
    """Until the controller has written the TauCluster's status for its present spec (ready or not)."""
    def current() -> bool:
        tc = k.get_or_none(TAUCLUSTER, st.setup)
        return tc is not None and (tc.get("status") or {}).get("observedGeneration") == meta(tc).get("generation")
    pidfile, logfile = setup.controller_files(st)
    poll.eventually(current, timeout, 0.5, done=lambda ok: ok or procs.read_pid(pidfile) is None)
    if procs.read_pid(pidfile) is None or not current():
        raise AttachError(f"the TauCluster controller did not report on TauCluster {st.setup} "
                          f"(log {shown(logfile)}); `tau-demo cluster status` shows what runs")


def detach(st: State, say: Callable[[str], None]) -> None:
    """Give the cluster back: the controllers started here stopped, the TauCluster deleted (the controller gives
    every adopted object back as it was first), then exactly what attach created; the cluster itself stays."""
    k = Kube(st.kubeconfig)
    pidfile, _ = setup.controller_files(st)
    for other in sorted(st.dir.glob("*/*.pid")):
        if other != pidfile and procs.stop(other):
            say(f"stopped {other.stem}")
    try:
        if MADE_TAUCLUSTER in st.wrote and _exists(k, TAUCLUSTER, st.setup):
            if procs.read_pid(pidfile) is None:
                setup.start_controller(st, impersonate=False)     # to give back what it adopted
            k.delete(TAUCLUSTER, st.setup)
            gone = poll.eventually(lambda: not _exists(k, TAUCLUSTER, st.setup), RELEASE_TIMEOUT, 0.5)
            if not gone:
                raise AttachError(f"TauCluster {st.setup} is still there after {RELEASE_TIMEOUT:.0f}s (its controller "
                                  "gives back what it adopted first; see its log); nothing else was removed")
            say(f"deleted TauCluster {st.setup}; every object it adopted is given back as it was")
        setup.stop_controller(st)
        if MADE_MARKER in st.wrote:
            _delete(k, CONFIG_MAP, MARKER[1], MARKER[0])
            say(f"deleted the marker {MARKER[0]}/{MARKER[1]}")
        if MADE_NAMESPACE in st.wrote:
            _delete(k, NAMESPACE, SYSTEM_NAMESPACE)
            say(f"deleted the namespace {SYSTEM_NAMESPACE}")
        if MADE_CRD in st.wrote and not k.list(TAUCLUSTER)[0]:
            _delete(k, CRD, TAUCLUSTER.crd_name)
            say(f"deleted the CRD {TAUCLUSTER.crd_name}")
        going = [(res, n) for res, n, made in ((NAMESPACE, SYSTEM_NAMESPACE, MADE_NAMESPACE),
                                               (CRD, TAUCLUSTER.crd_name, MADE_CRD)) if made in st.wrote]
        if not poll.eventually(lambda: not any(_exists(k, res, n) for res, n in going), RELEASE_TIMEOUT, 0.5):
            raise AttachError(f"{', '.join(n for _, n in going)} still there after {RELEASE_TIMEOUT:.0f}s of deleting; "
                              "run `tau-demo cluster down` again")
    except (Unreachable, ApiError) as e:
        raise AttachError(f"the cluster does not answer ({e}); nothing more was removed. The state stays in "
                          f"{shown(st.dir)}: run `tau-demo cluster down` again once it answers") from e
    remove_state(st.name)


def _delete(k: Kube, res, name: str, namespace: str | None = None) -> None:
    try:
        k.delete(res, name, namespace)
    except NotFound:
        pass


class AttachedBackend:
    """A cluster `cluster attach` took on: never built, never deleted; down gives it back."""
    name = BACKEND_NAME
    toolchain: tuple[str, ...] = ()

    def check(self, name: str, options) -> None:
        raise AttachError(f"cluster {name} is an attached cluster: `cluster up` does not build over it (attach it "
                          "again to repair, or `tau-demo cluster down` to give it back)")

    def up(self, name: str, options) -> State:
        self.check(name, options)
        raise AssertionError("unreachable")

    def down(self, name: str) -> bool:
        st = State.load(name)
        if st is None:
            return False
        detach(st, lambda msg: print(f"[cluster] {msg}", flush=True))
        return True

    def status(self, name: str) -> list[tuple[str, bool, str]]:
        st = State.load(name)
        if st is None:
            return [("cluster", False, f"no cluster {name}")]
        rows = [("attached", True, f"{st.mode} mode, TauCluster {st.setup}; the harness did not build it and never "
                                   "deletes it"), setup.controller_row(st)]
        try:
            tc = Kube(st.kubeconfig).get_or_none(TAUCLUSTER, st.setup)
        except (Unreachable, ApiError) as e:
            return rows + [("TauCluster", False, f"cannot be read: {e}")]
        said = setup.not_ready(tc, st.setup)
        return rows + [("profiles", not said, said or "every profile ProvisioningReady=True")]

    def restart(self, name: str, component: str, while_down=None) -> None:
        raise AttachError(f"cluster {name} is attached: the harness restarts nothing of it")


BACKEND = AttachedBackend()
