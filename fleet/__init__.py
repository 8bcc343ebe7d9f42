"""The design at fleet scale: `tau-demo fleet` drives N gang Jobs through K ClusterQueues in a cohort and P pools,
set up by a TauCluster at run time, under the fake or the real autoscaler, and measures the run from the objects.

- spec.py     what a fleet is, the plan of its gangs, its pools and its TauCluster, and why one is refused (pure)
- measure.py  the phases of every gang, percentiles, drain rate, start skew, deadline firings by cause (pure)
- checks.py   the design's invariants over the whole run, from the event log (pure)
- report.py   the run's report: a markdown summary and an SVG picture (pure)
- run.py      the run on a live cluster: set up, submit, record, clean up (I/O)
"""
