"""The demo's services, between the autoscaler and the stories: the pinned toolchain, the cluster backends,
a researcher's Job, the admission-deadline controller, the timeline, the real Cluster Autoscaler beside
the fake, and the live page.

The layers, lowest first (tests/unit/test_layers.py keeps imports pointing down; each top-level folder is one
band of them, in this order):

    k8s/        the foundation: the API client, the one watch, resources, keys, the checks on each kind
    fake_ca/    the fake Cluster Autoscaler
    demo/       toolchain < cluster < jobs, deadline, timeline, realca, taucluster < ui (the live page)
    scenarios/  the stories and their harness
    cli/        the command line, `tau-demo`
    bench/      benchmarks (a package: python -m bench.<name>)
"""
