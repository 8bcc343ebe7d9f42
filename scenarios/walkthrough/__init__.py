"""The walkthrough (`./scenario.sh`, "all"): the design's story on the real cluster, one module per story
(success, timeout, race, never_boot), and the race's soak (`tau-demo race soak`)."""

from ..kit.scenario import Group

GROUPS = (
    Group("success", "a 2 × 8-GPU gang waits for its nodes and starts once they exist", walkthrough=True),
    Group("timeout", "every wait is bounded, one layer at a time", walkthrough=True),
    Group("race", "admission and the admission deadline at the same moment", walkthrough=True),
    Group("beyond", "beyond the design's paths: nodes that never boot", walkthrough=True),
)
