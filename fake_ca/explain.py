"""What the fake autoscaler would decide for a ProvisioningRequest, offline (`tau-demo fake-ca explain`).

Reads a YAML stream with one ProvisioningRequest and its PodTemplates (as Kueue creates them;
`kind: List` wrappers from `kubectl get -o yaml` are unwrapped) and plans it against an empty
cluster with the node pools.  No cluster is needed.

Exit codes: 0 it fits; 2 it does not fit, or its class is not handled; 1 invalid input.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from .planner import plan
from k8s.pools import Pool
from .request import SUPPORTED_CLASSES, RequestError, request_from_objects, supported


class InputError(Exception):
    """Invalid input for explain (exit 1)."""


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
        kind = obj.get("kind")
        if isinstance(kind, str) and kind.endswith("List"):          # List, PodTemplateList, ...
            items = obj.get("items")
            if not isinstance(items, list):
                raise InputError(f"{source}: {where}: a {kind} needs a list of items, got {type(items).__name__}")
            for i, item in enumerate(items):
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


def read_source(filename: str) -> tuple[str, str]:
    """The text of FILE (or stdin for "-") and a name for it in messages."""
    if filename == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(filename).read_text(), filename
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{filename}: cannot read: {getattr(e, 'strerror', None) or e}") from None


def explain(text: str, source: str, pools: list[Pool]) -> tuple[int, str]:
    """(exit code, line): 0 it fits, 2 it does not (or its class is not handled).  InputError (exit 1)
    for invalid input."""
    provreq, templates = _split(_objects(text, source), source)
    ns, name = _name_of(provreq)
    key = f"{ns}/{name}"
    spec = provreq.get("spec") if isinstance(provreq.get("spec"), dict) else {}
    class_name = spec.get("provisioningClassName")
    if not isinstance(class_name, str) or not class_name:
        raise InputError(f"provreq {key}: spec.provisioningClassName is required")
    # The real CA only ever looks at requests of its classes; anything else stays untouched.
    if class_name not in SUPPORTED_CLASSES:
        return 2, f"provreq {key}: class {class_name} is not handled by the autoscaler; it would be left untouched"
    if not supported(provreq):
        return 2, (f"provreq {key}: parameters.processorInstance names another autoscaler instance; it would be left "
                   "untouched")
    try:
        request = request_from_objects(provreq, templates)
    except RequestError as e:
        raise InputError(f"provreq {key}: {e.reason}: {e.message}") from None
    verdict = plan(request, pools, nodes=[], pods=[])
    return (0 if verdict.fits else 2), verdict.line(request.key)
