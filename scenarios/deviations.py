"""The documented deviations of the fake autoscaler from the real Cluster Autoscaler that the conformance
probes can see.  Each entry names its README row (the table under "The real Cluster Autoscaler side by
side") and the exact values of the aspect that differs (fidelity.py), as `tau-demo conformance` printed
them.  A difference that matches no entry, or whose README row is missing, is undocumented and makes
`tau-demo conformance` exit 1.  Delete an entry (and its README row) when the fake stops deviating; a
documented deviation that no longer shows is reported as possibly stale.
"""

from __future__ import annotations

from .fidelity import Deviation

DEVIATIONS: list[Deviation] = []       # R1 (Accepted and Provisioned in one write) and R2 (whole-node booking)
                                       # were fixed in the fake: the probes no longer see a difference
