"""`tau-demo fake-ca explain`: what the fake autoscaler would decide for a ProvisioningRequest.

Reads a YAML stream with one ProvisioningRequest and its PodTemplates (as Kueue creates them;
`kind: List` wrappers from `kubectl get -o yaml` are unwrapped) and plans it against an empty
cluster with the node pools.  No cluster is needed.

Exit codes: 0 it fits; 2 it does not fit, or its class is not handled; 1 invalid input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from .planner import SUPPORTED_CLASSES, RequestError, plan, request_from_objects
from .pools import PoolsError, load_pools

DEFAULT_POOLS = Path(__file__).resolve().parent.parent / "manifests" / "node-pools.yaml"


class InputError(Exception):
    """Invalid input for explain (exit 1)."""


def _fail(msg: str) -> NoReturn:
    click.echo(f"error: {msg}", err=True)
    sys.exit(1)


def _objects(text: str, source: str) -> list[dict]:
    """The objects of a YAML stream, with List objects unwrapped and empty documents skipped."""
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        raise InputError(f"{source}: invalid YAML: {' '.join(str(e).split())}") from None
    out: list[dict] = []

    def add(obj: Any, where: str) -> None:
        if obj is None:
            return
        if not isinstance(obj, dict):
            raise InputError(f"{source}: {where}: expected a Kubernetes object, got {type(obj).__name__}")
        if obj.get("kind") == "List" or (isinstance(obj.get("kind"), str) and obj["kind"].endswith("List")
                                          and isinstance(obj.get("items"), list)):
            for i, item in enumerate(obj.get("items") or []):
                add(item, f"{where}.items[{i}]")
            return
        out.append(obj)

    for n, doc in enumerate(docs):
        add(doc, f"document {n + 1}")
    return out


def _name_of(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "?")


def _split(objs: list[dict], source: str) -> tuple[dict, dict[str, dict]]:
    """The one ProvisioningRequest and the PodTemplates by name; other kinds are ignored."""
    provreqs = [o for o in objs if o.get("kind") == "ProvisioningRequest"]
    if not provreqs:
        raise InputError(f"{source}: no ProvisioningRequest found")
    if len(provreqs) > 1:
        names = ", ".join("/".join(_name_of(o)) for o in provreqs)
        raise InputError(f"{source}: {len(provreqs)} ProvisioningRequests found ({names}); pass one at a time")
    templates: dict[str, dict] = {}
    for o in objs:
        if o.get("kind") != "PodTemplate":
            continue
        _, name = _name_of(o)
        if name in templates:
            raise InputError(f"{source}: PodTemplate {name} appears twice")
        templates[name] = o
    return provreqs[0], templates


def _read(filename: str) -> tuple[str, str]:
    if filename == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(filename).read_text(), filename
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{filename}: cannot read: {getattr(e, 'strerror', None) or e}") from None


@click.command("explain")
@click.option("-f", "--filename", required=True, metavar="FILE",
              help='YAML with one ProvisioningRequest and its PodTemplates ("-" for stdin)')
@click.option("--pools", "pools_file", default=str(DEFAULT_POOLS), show_default="manifests/node-pools.yaml",
              metavar="FILE", help="node pools file")
def explain(filename: str, pools_file: str) -> None:
    """Explain what the fake autoscaler would do with a ProvisioningRequest, on an empty cluster.

    Prints the decision line.  Exit 0 if it fits, 2 if it does not (or its class is not
    handled), 1 on invalid input.
    """
    try:
        text, source = _read(filename)
        provreq, templates = _split(_objects(text, source), source)
    except InputError as e:
        _fail(str(e))
    ns, name = _name_of(provreq)
    key = f"{ns}/{name}"
    spec = provreq.get("spec") if isinstance(provreq.get("spec"), dict) else {}
    class_name = spec.get("provisioningClassName")
    if not isinstance(class_name, str) or not class_name:
        _fail(f"provreq {key}: spec.provisioningClassName is required")
    # The real CA only ever looks at requests of its classes; anything else stays untouched.
    if class_name not in SUPPORTED_CLASSES:
        click.echo(f"provreq {key}: class {class_name} is not handled by the autoscaler; it would be left untouched")
        sys.exit(2)
    try:
        request = request_from_objects(provreq, templates)
    except RequestError as e:
        _fail(f"provreq {key}: {e.reason}: {e.message}")
    try:
        pools = load_pools(pools_file)
    except PoolsError as e:
        _fail(str(e))
    verdict = plan(request, pools, nodes=[], pods=[])
    click.echo(verdict.line(request.key))
    sys.exit(0 if verdict.fits else 2)
