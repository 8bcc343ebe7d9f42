"""The design's story on the real cluster, one module per story: the walkthrough (`./scenario.sh`, "all": success,
timeout, race, never_boot), the group `gangs` beside it (half_gang: a gang that starts in part), and the race's soak
(`tau-demo race soak`)."""

from ..kit.scenario import Group

GROUPS = (
    Group("success", "a 2 × 8-GPU gang waits for its nodes and starts once they exist", walkthrough=True),
    Group("timeout", "every wait is bounded, one layer at a time", walkthrough=True),
    Group("race", "admission and the admission deadline at the same moment", walkthrough=True),
    Group("beyond", "beyond the design's paths: nodes that never boot", walkthrough=True),
    # the design's answer to a gang that starts in part (docs/fleet.md, "Gangs at scale"): its story takes two
    # minutes of its own, beside the walkthrough's two, so it is not part of "all"
    Group("gangs", "a gang that starts in part: waitForPodsReady bounds how long it holds its GPUs", walkthrough=False),
)
