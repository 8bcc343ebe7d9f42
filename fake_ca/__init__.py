"""The fake Cluster Autoscaler: answers Kueue's ProvisioningRequests by creating KWOK GPU nodes.

Pure: request (parse and validate), scheduling (predicates), planner (placement), conditions
(the only home of the autoscaler's reasons and messages), lifecycle (one request's next step),
scaledown, pools (node pools and the Nodes they produce), explain (an offline verdict).
Imperative shell: controller (read -> step -> apply).
"""
