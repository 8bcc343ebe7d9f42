"""A product: Kueue v0.19.2's own provisioning specs, end to end (`tau-demo kueue-specs`, its entry point
`suite.kueue_specs`): one scenario per `It` of
test/integration/singlecluster/controller/admissionchecks/provisioning/provisioning_test.go, where an
autoscaler (the fake, or the real Cluster Autoscaler 1.36.1) writes every condition the spec sets by hand; their
`kit` and the results `table` (pure)."""

from ..kit.scenario import Group

GROUPS = (Group("kueue-specs", "Kueue v0.19.2's own provisioning specs, driven end to end by an autoscaler",
                walkthrough=False),)
