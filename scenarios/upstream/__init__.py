"""Known defects of Kueue v0.19.2 as runnable scenarios, one module per upstream report.

Each module has REPORT (number, title, claim, fixed_in), NAME (the scenario's name), run(ctx) and,
when it needs a fault injected into the fake autoscaler, NEEDS_FAKE (why, in one line).  run(ctx)
says whether the defect reproduces here (kit.verdict) and which layer of the design bounds it.  A new
report is a new module listed in REPORTS; never_provisioned.py is the shortest example.
"""

from . import inactive_admitted, name_loop, never_provisioned, rejected_during_eviction

REPORTS = [name_loop, rejected_during_eviction, inactive_admitted, never_provisioned]
