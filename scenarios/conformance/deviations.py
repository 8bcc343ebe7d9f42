"""The documented deviations of the fake autoscaler from the real Cluster Autoscaler 1.36.1 that the conformance
probes see.  Each entry names its row in docs/autoscaler.md (a D row of the deliberate differences, an R row of
those the probes see) and the exact values of the aspect that differs (fidelity.py), as `tau-demo conformance`
printed them; ANY stands for a value that varies from run to run (a measured time).  A difference that matches
no entry, or whose row is missing from docs/autoscaler.md, is undocumented and makes `tau-demo conformance`
exit 1.  Delete an entry (and its row) when the fake stops deviating; a documented deviation that no longer
shows is reported as possibly stale.

Fixed in the fake, so no longer here: Accepted and Provisioned in one write (R1) and whole-node booking (R2);
the fake's updates by field manager fake-ca (now cluster-autoscaler, like the real one's), check-capacity with
parameters.processorInstance (now left untouched, like the real one), a scale-down without the
ToBeDeletedByClusterAutoscaler taint and its 5 s delay (now both).
"""

from __future__ import annotations

from .fidelity import ANY, Deviation

DEVIATIONS: list[Deviation] = [
    Deviation('D9', 'booking-consumed-by-pods', 'sequence',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound | '
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound → BookingExpired=True/CapacityBookingConsumed',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound | '
              'Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned'),
    Deviation('D9', 'booking-consumed-by-pods', 'order',
              '1 Accepted → 1 Provisioned → 1 BookingExpired → 2 Accepted → 2 Provisioned',
              '1 Accepted → 1 Provisioned → 2 Accepted → 2 Provisioned'),
    Deviation('D9', 'booking-consumed-by-pods', 'messages',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'BookingExpired/CapacityBookingConsumed: Capacity booking consumed: all pods scheduled | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster | '
              'Provisioned/CapacityIsProvisioned: Capacity is found in the cluster'),
    Deviation('D9', 'booking-consumed-by-pods', 'writers',
              'Accepted by cluster-autoscaler/Update; BookingExpired by cluster-autoscaler/Update; '
              'Provisioned by cluster-autoscaler/Apply | Accepted by cluster-autoscaler/Update; '
              'Provisioned by cluster-autoscaler/Apply',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply | '
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D9', 'booking-consumed-by-pods', 'nodes',
              '(none)',
              'gpupool: 1 created, 0 deleted'),
    Deviation('D1', 'vm-boots', 'timing',
              ANY,
              ANY),
    Deviation('D2', 'stockout-injected', 'sequence',
              'Accepted=True/Accepted → Provisioned=False/CapacityIsNotFound',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned'),
    Deviation('D2', 'stockout-injected', 'messages',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsNotFound: Capacity is not found, CA will try to find it later.',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsProvisioned: Capacity is found in the cluster'),
    Deviation('D2', 'stockout-injected', 'nodes',
              '(none)',
              'gpupool: 1 created, 0 deleted'),
    Deviation('D4', 'valid-until-honored', 'sequence',
              'Failed=True/ValidUntilSecondsExpired',
              'Accepted=True/Accepted → Provisioned=False/CapacityIsNotFound'),
    Deviation('D4', 'valid-until-honored', 'messages',
              'Failed/ValidUntilSecondsExpired: capacity not provisioned within ValidUntilSeconds=0 (honoured by fake-ca --honor-valid-until; '
              'the real autoscaler ignores it)',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsNotFound: Capacity is not found, CA will try to find it later.'),
    Deviation('D4', 'valid-until-honored', 'writers',
              'Failed by cluster-autoscaler/Update',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D5', 'revoke-after-provisioned', 'sequence',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound → CapacityRevoked=True/CapacityRevokedInjected',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound'),
    Deviation('D5', 'revoke-after-provisioned', 'messages',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'CapacityRevoked/CapacityRevokedInjected: capacity revoked by fault injection (fake-ca) | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster'),
    Deviation('D5', 'revoke-after-provisioned', 'writers',
              'Accepted by cluster-autoscaler/Update; CapacityRevoked by cluster-autoscaler/Update; '
              'Provisioned by cluster-autoscaler/Apply',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D6', 'revoke-before-provisioned', 'sequence',
              'CapacityRevoked=True/CapacityRevokedInjected',
              'Accepted=True/Accepted → Provisioned=False/CapacityIsNotFound'),
    Deviation('D6', 'revoke-before-provisioned', 'messages',
              'CapacityRevoked/CapacityRevokedInjected: capacity revoked by fault injection (fake-ca)',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsNotFound: Capacity is not found, CA will try to find it later.'),
    Deviation('D6', 'revoke-before-provisioned', 'writers',
              'CapacityRevoked by cluster-autoscaler/Update',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D7', 'fail-attempts-injected', 'sequence',
              'Accepted=True/Accepted → Failed=True/AttemptFailedInjected',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound'),
    Deviation('D7', 'fail-attempts-injected', 'messages',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Failed/AttemptFailedInjected: attempt 1 failed by fault injection (fake-ca fakeCAFailAttempts=1)',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster'),
    Deviation('D7', 'fail-attempts-injected', 'writers',
              'Accepted by cluster-autoscaler/Update; Failed by cluster-autoscaler/Update',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D8', 'booking-seconds-injected', 'sequence',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound → BookingExpired=True/CapacityReservationTimeExpired',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound'),
    Deviation('D8', 'booking-seconds-injected', 'messages',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'BookingExpired/CapacityReservationTimeExpired: Capacity reservation time is expired | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsFound: Capacity is found in the cluster'),
    Deviation('D8', 'booking-seconds-injected', 'writers',
              'Accepted by cluster-autoscaler/Update; BookingExpired by cluster-autoscaler/Update; '
              'Provisioned by cluster-autoscaler/Apply',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D15', 'ttl-injected', 'sequence',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound → gone',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsFound'),
    Deviation('D15', 'ttl-injected', 'writers',
              '(none)',
              'Accepted by cluster-autoscaler/Update; Provisioned by cluster-autoscaler/Apply'),
    Deviation('D10', 'expander-choice', 'nodes',
              'gpupool: 1 created, 0 deleted',
              'ondemand: 1 created, 0 deleted'),
    Deviation('D11', 'scheduling-host-port', 'nodes',
              'gpupool: 1 created, 0 deleted',
              'gpupool: 2 created, 0 deleted'),
    Deviation('D12', 'pending-pod-without-request', 'nodes',
              '(none)',
              'ondemand: 1 created, 0 deleted'),
    Deviation('R6', 'never-ready-backoff', 'sequence',
              'Accepted=True/Accepted → Provisioned=False/CapacityIsNotFound | '
              'Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned',
              'Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned | '
              'Accepted=True/Accepted → Provisioned=True/CapacityIsProvisioned'),
    Deviation('R6', 'never-ready-backoff', 'messages',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsNotFound: Capacity is not found, CA will try to find it later. | '
              'Provisioned/CapacityIsProvisioned: Capacity is found in the cluster',
              'Accepted/Accepted: ProvisioningRequest is accepted by ClusterAutoscaler | '
              'Provisioned/CapacityIsProvisioned: Capacity is found in the cluster'),
    Deviation('R6', 'never-ready-backoff', 'nodes',
              'stuckpool: 1 created, 1 deleted',
              'stuckpool: 2 created, 0 deleted'),
    Deviation('R6', 'never-ready-backoff', 'groups',
              'stuckpool: NoActivity → Backoff (timeout)',
              'stuckpool: NoActivity'),
    Deviation('R6', 'never-ready-backoff', 'timing',
              ANY,
              'Provisioned to node deleted never; Provisioned to stuckpool backed off never'),
]
