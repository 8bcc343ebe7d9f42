"""The apiserver's audit events (audit.k8s.io/v1 Event, one JSON object per line of the log), as the writes they
record: who, which verb, which object, and the answer.  Pure: lines in, writes out; a line that is not an event is
skipped (a log being written may end in half a line)."""

from __future__ import annotations

import json
from dataclasses import dataclass

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class AuditedWrite:
    user: str              # who wrote: the impersonated user where the request impersonated one
    verb: str
    resource: str          # plural, with "/subresource" when there is one (tauclusters/status)
    namespace: str
    name: str
    code: int              # the apiserver's answer (0 when the event has none)
    time: str              # stageTimestamp
    agent: str = ""        # the client program, from its User-Agent: "kueue", "kubectl", "OpenAPI-Generator"

    @property
    def refused(self) -> bool:
        return self.code >= 400

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.user} {self.verb} {self.resource} {where} -> {self.code}"


def writes(lines: list[str]) -> list[AuditedWrite]:
    """Every write among the events' lines, in order (ResponseComplete or Panic stage only: one event per request)."""
    out = []
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if not isinstance(ev, dict) or ev.get("verb") not in WRITE_VERBS or ev.get("stage") not in (
                "ResponseComplete", "Panic"):
            continue
        ref = ev.get("objectRef") or {}
        resource = str(ref.get("resource") or "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        who = (ev.get("impersonatedUser") or ev.get("user") or {}).get("username")
        out.append(AuditedWrite(str(who or ""), str(ev["verb"]), resource,
                         str(ref.get("namespace") or ""), str(ref.get("name") or ""),
                         int((ev.get("responseStatus") or {}).get("code") or 0), str(ev.get("stageTimestamp") or ""),
                         str(ev.get("userAgent") or "").partition("/")[0]))
    return out
