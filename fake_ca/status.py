"""The autoscaler's status ConfigMap, kube-system/cluster-autoscaler-status, as the real one writes it
(clusterstate/api/types.go; a subset): per node group its node counts and whether scale-ups are
backed off, and why.  Scenarios and `tau-demo watch` read node-group backoff from it (pure)."""

from __future__ import annotations

from datetime import datetime

import yaml

from k8s import node as nodes_
from k8s.keys import CA_STATUS, CA_STATUS_KEY, GROUP_BACKOFF
from k8s.objects import format_time
from k8s.resources import CONFIG_MAP

from .backoff import GroupBackoff, backed_off
from .nodes import booting
from k8s.pools import Pool


def status_document(pools: list[Pool], nodes: list[dict], groups: dict[str, GroupBackoff], now: datetime) -> dict:
    """The status document (without its time: compare two of them to know whether anything changed)."""
    out = []
    for p in pools:
        mine = nodes_.of_pool(nodes, p.name)
        ready = sum(1 for n in mine if nodes_.ready(n))
        g = groups.get(p.name)
        scale_up: dict = {"status": "NoActivity"}
        if any(booting(n) for n in mine):
            scale_up = {"status": "InProgress"}
        if backed_off(g, now):
            scale_up = {"status": GROUP_BACKOFF,
                        "backoffInfo": {"errorCode": g.error_code, "errorMessage": g.error_message},
                        "lastTransitionTime": format_time(g.last_failure)}
        out.append({"name": p.name,
                    "health": {"status": "Healthy", "cloudProviderTarget": len(mine), "minSize": p.min_nodes,
                               "maxSize": p.max_nodes,
                               "nodeCounts": {"registered": {"total": len(mine), "ready": ready,
                                                             "notStarted": len(mine) - ready}}},
                    "scaleUp": scale_up})
    return {"autoscalerStatus": "Running", "nodeGroups": out}


def scale_up_states(doc: dict) -> list:
    """The part of a status document that must be published at once when it changes."""
    return [(g.get("name"), g.get("scaleUp")) for g in doc.get("nodeGroups") or []]


def configmap(doc: dict, now: datetime) -> dict:
    return CONFIG_MAP.new(CA_STATUS[1], CA_STATUS[0],
                          data={CA_STATUS_KEY: yaml.safe_dump({"time": format_time(now), **doc}, sort_keys=False)})


def document_of(cm: dict | None) -> dict:
    """The document a status ConfigMap holds (its time included), as either autoscaler wrote it; {} when there is
    none, or it is no YAML mapping."""
    text = ((cm or {}).get("data") or {}).get(CA_STATUS_KEY)
    try:
        doc = yaml.safe_load(text) if text else {}
    except yaml.YAMLError:
        return {}
    return doc if isinstance(doc, dict) else {}


def group_backoff(cm: dict | None, pool: str) -> dict | None:
    """The scaleUp entry of `pool` if it is backed off, read from a status ConfigMap; None otherwise."""
    for g in document_of(cm).get("nodeGroups") or []:
        if isinstance(g, dict) and g.get("name") == pool and (g.get("scaleUp") or {}).get("status") == GROUP_BACKOFF:
            return g["scaleUp"]
    return None
