"""The conformance tool (`tau-demo conformance`), beside the stories: the same ProvisioningRequests put to the fake
and to the real Cluster Autoscaler (`probes`), their records compared (`fidelity`, pure), and the differences
documented (`deviations`)."""
