"""The stories reviewers run on the real cluster, on three floors: the shared kit (`kit`: the harness, what a
scenario is, the recorder, the controllers, the toolbox, the catalogue and the runner), the story families above it
(`walkthrough`, `upstream`, `taucluster`, `multikueue`: each a package with its groups and stories), and the two
products on top, each with its entry point and report (`kueue_specs`: Kueue's own provisioning specs, `tau-demo
kueue-specs`; `conformance`: the fake autoscaler against the real one, `tau-demo conformance`)."""
