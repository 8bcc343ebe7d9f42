"""The design's once-per-cluster setup: a TauCluster's profiles as Kueue objects (profile, pure), and what each
mode (Manage, Adopt, External) does about the objects it finds (plan, pure)."""
