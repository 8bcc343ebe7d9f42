"""The benchmarks: one module per measured figure of docs/benchmarks.md, each run from the repository's root as
`.venv/bin/python -m bench.<name>` (its docstring says what it measures, what it needs and its options).

The top layer: a benchmark may use every layer below it and nothing uses it.  It observes the cluster through the
one observation layer (k8s/tape.py: a Tape, or the scenarios' Recorder on one), reaches the scenarios only through
their shared kit (harness, controllers, recorder), and keeps every function to 60 lines
(tests/unit/test_layers.py).  The two ideal clients are controllers (they write), the ceilings the fake
autoscaler and the deadline controller are measured against.
"""
