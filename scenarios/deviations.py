"""The documented deviations of the fake autoscaler from the real Cluster Autoscaler that the conformance
probes can see.  Each entry names its README row (the table under "The real Cluster Autoscaler side by
side") and the exact values of the aspect that differs (fidelity.py), as `tau-demo conformance` printed
them.  A difference that matches no entry, or whose README row is missing, is undocumented and makes
`tau-demo conformance` exit 1.  Delete an entry (and its README row) when the fake stops deviating; a
documented deviation that no longer shows is reported as possibly stale.
"""

from __future__ import annotations

from .fidelity import ARROW, Deviation

# R1: the fake writes Accepted and Provisioned in one apply; the real CA in two writes of the same loop.
_ONE_WRITE = {
    "scale-up": "Accepted=True/Accepted + Provisioned=True/CapacityIsProvisioned",
    "over-max": "Accepted=True/Accepted + Provisioned=False/CapacityIsNotFound",
    "existing-capacity": "Accepted=True/Accepted + Provisioned=True/CapacityIsFound",
    "check-capacity-fits": "Accepted=True/Accepted + Provisioned=True/CapacityIsFound",
    "check-capacity-no": "Accepted=True/Accepted + Provisioned=False/CapacityIsNotFound",
}

DEVIATIONS: list[Deviation] = [
    *(Deviation("R1", probe, "sequence", fake, fake.replace(" + ", ARROW)) for probe, fake in _ONE_WRITE.items()),
    # R2: the fake books only whole nodes it created, so both requests take the one free node; the real CA
    # books the first request's pods on it and scales up one node for the second (and R1 in both requests).
    Deviation("R2", "booking", "sequence",
              "Accepted=True/Accepted + Provisioned=True/CapacityIsFound | "
              "Accepted=True/Accepted + Provisioned=True/CapacityIsFound",
              "Accepted=True/Accepted → Provisioned=True/CapacityIsFound | "
              "Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned"),
    Deviation("R2", "booking", "messages",
              "Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | "
              "Provisioned/CapacityIsFound: Capacity is found in the cluster",
              "Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | "
              "Provisioned/CapacityIsFound: Capacity is found in the cluster | "
              "Provisioned/CapacityIsProvisioned: Capacity is found in the cluster"),
    Deviation("R2", "booking", "nodes", "0", "1"),
]
