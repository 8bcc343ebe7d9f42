"""The one duration parser: Go-style durations ("90s", "1m30s", "2h", "1.5m", "250ms") or plain seconds."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$")


FOREVER = float("inf")        # a time that never comes: a VM that never boots, a stock-out that never ends


class BadDuration(ValueError):
    pass


def parse_duration(text: str) -> float:
    """Seconds.  BadDuration (a ValueError) with an example when `text` is not a duration."""
    bad = BadDuration(f"{text!r} is not a duration (examples: 90s, 5m, 1h30m)")
    if not isinstance(text, str):
        raise bad
    t = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    m = _DURATION.match(t)
    if not m or not any(m.groups()):          # "" matches with every group empty
        raise bad
    h, mi, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000


def go_duration(seconds: float) -> str:
    """How Go's time.Duration prints (to the millisecond): 250ms, 20.5s, 3m0s, 1h2m3.5s."""
    ms = round(seconds * 1000)
    if ms < 1000:
        return f"{ms}ms"
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    return (f"{h}h{m}m" if h else f"{m}m" if m else "") + f"{s}s"
