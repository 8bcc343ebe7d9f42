"""Known defects of Kueue v0.19.2 as runnable scenarios, one module per upstream report.

Each module declares its REPORT (kit.scenario.Report: number, title, claim, fixed_in) and its Scenario
(SCENARIOS, group "upstream"); run(ctx) says whether the defect reproduces here (toolbox.verdict) and which
layer of the design bounds it.  A new report is a new module here, found by scenarios.kit.catalogue;
never_provisioned.py is the shortest example.
"""

from ..kit.scenario import Group

GROUPS = (Group("upstream", "known Kueue v0.19.2 and Cluster Autoscaler 1.36.1 defects, reproduced or not",
                walkthrough=False),)
