"""tau-demo: the command line.  One module per command group; this root only wires them together.

Exit codes: 0 success; 1 failure or invalid input (the message says which); 2 for a
well-formed request that cannot be satisfied (a gang that does not fit) and for click
usage errors.
"""

from __future__ import annotations

import logging
import sys

import click

from .clean import clean_cmd
from .cluster import cluster_group
from .conformance import conformance_cmd
from .deadline import deadline_cmd
from .taucluster import taucluster_cmd
from .fake_ca import fake_ca_group
from .fleet import fleet_group
from .jobs import preflight_cmd, report_cmd, submit_cmd, watch_cmd
from .kueue_specs import kueue_specs_cmd
from .options import CONTEXT_SETTINGS
from .real_ca import real_ca_cmd
from .scenario import race_group, scenario_group
from .toolchain import toolchain_group
from .ui import ui_cmd


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stderr)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    logging.getLogger("kubernetes").setLevel(logging.WARNING)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option("-v", "--verbose", is_flag=True, help="debug logging")
def main(verbose: bool) -> None:
    """Capacity-aware admission for GPU batch jobs, reproduced on one machine.

    Real Kueue v0.19.2 gates admission on a ProvisioningRequest AdmissionCheck; a fake
    Cluster Autoscaler creates KWOK GPU nodes atomically; an admission-deadline controller
    bounds every wait.  Start with `tau-demo cluster up`.
    """
    setup_logging(verbose)


for command in (toolchain_group, cluster_group, submit_cmd, preflight_cmd, watch_cmd, report_cmd, fake_ca_group,
                deadline_cmd, taucluster_cmd, scenario_group, race_group, real_ca_cmd, conformance_cmd, kueue_specs_cmd, ui_cmd,
                clean_cmd, fleet_group):
    main.add_command(command)
