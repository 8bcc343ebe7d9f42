"""A product: the conformance tool (`tau-demo conformance`, its entry point `tool.conformance`), beside the stories:
the same ProvisioningRequests put to the fake and to the real Cluster Autoscaler (`probes`), their records compared
(`fidelity`, pure), and the differences documented (`deviations`)."""
