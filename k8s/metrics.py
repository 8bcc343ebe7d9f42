"""Prometheus text exposition, read (pure): the samples of a /metrics page, and the value of one series picked
by its name and some of its labels.  Both the real Cluster Autoscaler's and Kueue's metrics are read through it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def _unescape(v: str) -> str:
    return v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def samples(text: str) -> list[Sample]:
    """Every sample line of the page (comments, blank and unreadable lines are skipped)."""
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())          # a comment starts with "#", which no metric name does
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        labels = {k: _unescape(v) for k, v in _LABEL.findall(m.group(2))} if m.group(2) else {}
        out.append(Sample(m.group(1), labels, value))
    return out


def value(text: str, name: str, **labels: str) -> float | None:
    """The value of the first series named `name` whose labels include `labels` (each equal); None when the page
    has no such series (a counter nothing has counted yet is absent: read it as 0 where that is what it means)."""
    for s in samples(text):
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None
