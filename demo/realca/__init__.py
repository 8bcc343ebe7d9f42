"""The real Cluster Autoscaler (1.36.1, kwok cloud provider only) side by side with the fake one: the kwok
provider's ConfigMaps generated from the node pools file (provider, pure), running the CA out of cluster
as a child process with a heartbeat Lease (process), and the rule that the fake and the real autoscaler
never run together (exclusion: the reads; coexist: why each refuses, pure)."""
