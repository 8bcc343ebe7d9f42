"""tau-demo: the command line.  Subcommands are grouped by concern; each module registers its own.

Exit codes: 0 success; 1 failure or invalid input (the message says which); 2 for a
well-formed request that cannot be satisfied (a gang that does not fit) and for click
usage errors.
"""

from __future__ import annotations

import logging
import sys
import time

import click

from . import cluster, kube, toolchain
from .cli_util import fail

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option("-v", "--verbose", is_flag=True, help="debug logging")
def main(verbose: bool) -> None:
    """Capacity-aware admission for GPU batch jobs, reproduced on one machine.

    Real Kueue v0.19.2 gates admission on a ProvisioningRequest AdmissionCheck; a fake
    Cluster Autoscaler creates KWOK GPU nodes atomically; an admission-deadline controller
    bounds every wait.  Start with `tau-demo cluster up`.
    """
    setup_logging(verbose)


# ---------------------------------------------------------------------------- toolchain

@main.group(context_settings=CONTEXT_SETTINGS)
def toolchain_group() -> None:
    """Pinned binaries, built from the Go module proxy into a version-keyed cache."""


main.add_command(toolchain_group, "toolchain")


@toolchain_group.command("ensure")
@click.option("--with-kind", is_flag=True, help="also build kind (only the Docker path needs it)")
def toolchain_ensure(with_kind: bool) -> None:
    """Build whatever pinned binary is missing or reports the wrong version (resumable)."""
    try:
        built = toolchain.ensure(include_kind=with_kind)
    except toolchain.ToolchainError as e:
        fail(str(e))
    click.echo(f"toolchain ready ({'built ' + ', '.join(built) if built else 'nothing to build'}); "
               f"cache {toolchain.cache_root()}")


@toolchain_group.command("versions")
@click.option("--with-kind", is_flag=True, help="also require kind")
def toolchain_versions(with_kind: bool) -> None:
    """One line per binary: NAME VERSION PATH.  Exit 1 if any is missing or wrong."""
    bad = 0
    for name, version, path, ok in toolchain.versions_table():
        optional = name == "kind" and not with_kind
        click.echo(f"{name:44} {version:10} {path}{'' if ok else ('  (optional: Docker path)' if optional else '  <-- WRONG')}")
        bad += 0 if ok or optional else 1
    if bad:
        fail(f"{bad} binaries missing or at the wrong version; run `tau-demo toolchain ensure`")


# ---------------------------------------------------------------------------- cluster

@main.group("cluster", context_settings=CONTEXT_SETTINGS)
def cluster_group() -> None:
    """Bring the demo cluster (control plane + real Kueue + KWOK) up and down."""


def _backend(choice: str) -> str:
    if choice != "auto":
        return choice
    from . import backend_kind
    return "kind" if backend_kind.docker_answers() else "kwok"


def _backend_module(name: str):
    from . import backend_kind, backend_kwok
    return {"kwok": backend_kwok, "kind": backend_kind}[name]


@cluster_group.command("up")
@click.option("--backend", type=click.Choice(["auto", "kwok", "kind"]), default="auto", show_default=True,
              help="auto: kind when a Docker engine answers, else kwokctl's binary runtime")
@click.option("--name", default=cluster.DEFAULT_NAME, show_default=True)
@click.option("--apiserver-port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="kwok backend: fixed apiserver port (0 = any free port)")
def cluster_up(backend: str, name: str, apiserver_port: int) -> None:
    """Create the cluster (idempotent: repairs what is missing) and print how to use it."""
    t0 = time.monotonic()
    existing = cluster.State.load(name)
    chosen = existing.backend if existing and backend == "auto" else _backend(backend)
    try:
        toolchain.ensure(include_kind=chosen == "kind")
        mod = _backend_module(chosen)
        st = mod.up(name, apiserver_port) if chosen == "kwok" else mod.up(name)
    except (toolchain.ToolchainError, cluster.ClusterError, kube.Unreachable, kube.ApiError) as e:
        fail(str(e))
    click.echo(f"cluster {name} ({chosen}) ready in {time.monotonic() - t0:.1f}s with Kueue and the demo objects.")
    click.echo(f"  kubeconfig: {st.kubeconfig}")
    click.echo(f"  use it:     export KUBECONFIG={st.kubeconfig}   (tau-demo commands find it by themselves)")
    click.echo(f"  kubectl:    {toolchain.bin_path('kubectl')}")
    click.echo("  tear down:  tau-demo cluster down")


@cluster_group.command("down")
@click.option("--name", default=cluster.DEFAULT_NAME, show_default=True)
def cluster_down(name: str) -> None:
    """Stop every process the demo started, by pid, and remove the cluster state."""
    st = cluster.State.load(name)
    t0 = time.monotonic()
    try:
        existed = _backend_module(st.backend).down(name) if st else False
    except cluster.ClusterError as e:
        fail(str(e))
    click.echo(f"cluster {name} removed in {time.monotonic() - t0:.1f}s" if existed else f"no cluster {name}: nothing to do")


@cluster_group.command("status")
@click.option("--name", default=cluster.DEFAULT_NAME, show_default=True)
def cluster_status(name: str) -> None:
    """What runs, and whether Kueue's webhooks answer.  Exit 1 if anything is down."""
    st = cluster.State.load(name)
    if st is None:
        fail(f"no cluster {name}; run `tau-demo cluster up`")
    rows = _backend_module(st.backend).status(name)
    ok_all = all(ok for _, ok, _ in rows)
    try:
        k = kube.Kube(st.kubeconfig)
        ver = k.raw("/version")
        import json
        rows.append(("apiserver", True, f"{json.loads(ver)['gitVersion']} at {k.host}"))
        ok, msg = cluster.webhook_answers(k)
        rows.append(("kueue webhooks", ok, msg))
        ok_all &= ok
    except (kube.Unreachable, kube.ApiError) as e:
        rows.append(("apiserver", False, str(e)))
        ok_all = False
    for comp, ok, detail in rows:
        click.echo(f"{'✓' if ok else '✗'} {comp:24} {detail}")
    click.echo(f"kubeconfig: {st.kubeconfig}")
    if not ok_all:
        sys.exit(1)


def register_plugins() -> None:
    """Commands that live beside their concern (fake_ca, the deadline controller, scenarios)."""
    import importlib
    for mod in ("fake_ca.cli", "demo.jobs_cli", "demo.deadline_cli", "scenarios.cli"):
        importlib.import_module(mod).register(main)


register_plugins()
