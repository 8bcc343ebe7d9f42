"""The fake and the real autoscaler never run on one cluster at the same time: the reads (I/O); why each
refuses is coexist.py (pure).

`fake_running` is what `tau-demo real-ca` checks; `real_running` is what `tau-demo fake-ca` checks.
Both return None (go ahead) or the reason to refuse.  Each reads only as far as it needs to.
"""

from __future__ import annotations

from datetime import datetime, timezone

from k8s import heartbeat
from k8s.client import Kube
from k8s.keys import CA_STATUS, FAKE_CA_LEASE, REAL_CA_LEASE
from k8s.resources import CONFIG_MAP, NODE
from . import coexist


def fake_running(k: Kube) -> str | None:
    if heartbeat.alive(k, FAKE_CA_LEASE):
        return coexist.FAKE_ALIVE
    return coexist.fake_nodes_left(k.list(NODE)[0])


def real_running(k: Kube, now: datetime | None = None) -> str | None:
    if heartbeat.alive(k, REAL_CA_LEASE):
        return coexist.REAL_ALIVE
    why = coexist.status_fresh(k.get_or_none(CONFIG_MAP, CA_STATUS[1], CA_STATUS[0]),
                               now or datetime.now(timezone.utc))
    return why or coexist.real_nodes_left(k.list(NODE)[0])
