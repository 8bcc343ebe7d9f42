"""Fake Cluster Autoscaler: answers Kueue's ProvisioningRequests by creating KWOK GPU nodes.

The pure, cluster-free parts live in `quantity` (resource quantities), `pools` (node pools and
the Node objects they produce), `planner` (the placement decision) and `explain` (a CLI that runs
the planner on a YAML bundle without a cluster).
"""
