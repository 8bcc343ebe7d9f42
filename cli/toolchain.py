"""`tau-demo toolchain ensure / versions`."""

from __future__ import annotations

import click

from k8s.paths import cache_root
from demo.toolchain import components
from demo.toolchain.gobuild import ToolchainError
from .options import CONTEXT_SETTINGS, fail

BACKEND_CHOICE = click.Choice(["all", *components.BACKEND_NAMES])


def _selection(backend: str, with_kind: bool) -> tuple[str, ...]:
    if backend == "all":
        return components.BACKEND_NAMES
    return tuple({backend, "kind"} if with_kind else {backend})


@click.group("toolchain", context_settings=CONTEXT_SETTINGS)
def toolchain_group() -> None:
    """Pinned binaries, built from the Go module proxy into a version-keyed cache."""


@toolchain_group.command("ensure")
@click.option("--backend", type=BACKEND_CHOICE, default="kwok", show_default=True,
              help="build what this cluster backend needs (kind: only kubectl, kind and manifests)")
@click.option("--with-kind", is_flag=True, help="also build what the kind backend needs")
@click.option("--with-actionlint", is_flag=True, help="also build actionlint (lints the kind smoke workflow)")
@click.option("--with-real-ca", is_flag=True,
              help="also build the real cluster-autoscaler (kwok provider only) from $TAU_DEMO_CA_SOURCE "
                   "(a directory, or a .tar.xz whose sha256 matches the pin), else from a shallow git clone")
def toolchain_ensure(backend: str, with_kind: bool, with_actionlint: bool, with_real_ca: bool) -> None:
    """Build whatever pinned binary is missing or reports the wrong version (resumable)."""
    extras = ("actionlint",) if with_actionlint else ()
    extras += ("cluster-autoscaler",) if with_real_ca else ()
    try:
        built = components.ensure(_selection(backend, with_kind), extras)
    except ToolchainError as e:
        fail(str(e))
    click.echo(f"toolchain ready ({'built ' + ', '.join(built) if built else 'nothing to build'}); "
               f"cache {cache_root()}")


@toolchain_group.command("versions")
@click.option("--backend", type=BACKEND_CHOICE, default="kwok", show_default=True,
              help="require what this backend needs; the rest is listed as optional")
@click.option("--with-kind", is_flag=True, help="also require what the kind backend needs")
@click.option("--with-real-ca", is_flag=True, help="also require the real cluster-autoscaler")
def toolchain_versions(backend: str, with_kind: bool, with_real_ca: bool) -> None:
    """One line per binary: NAME VERSION PATH.  Exit 1 if a required one is missing or wrong."""
    extras = ("cluster-autoscaler",) if with_real_ca else ()
    required = {c.name for c in components.wanted(_selection(backend, with_kind), extras)}
    bad = 0
    for c in components.COMPONENTS:
        for name, version, path, ok in components.versions_table([c]):
            optional = c.name not in required
            mark = "" if ok else ("  (optional)" if optional else "  <-- WRONG")
            click.echo(f"{name:44} {version:10} {path}{mark}")
            bad += 0 if ok or optional else 1
    if bad:
        fail(f"{bad} binaries missing or at the wrong version; run `tau-demo toolchain ensure`")
