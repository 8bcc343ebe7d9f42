"""capacity-provisioning-demo: real Kueue v0.19.2 + fake Cluster Autoscaler + admission deadline, on one machine."""
