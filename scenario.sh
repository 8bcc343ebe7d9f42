#!/usr/bin/env bash
# The walkthrough: success, timeout and race paths on the real cluster made by ./setup.sh.
#   AUTO=1 ./scenario.sh            never waits for input
#   ./scenario.sh race              one group (success, timeout, race, beyond, gangs, upstream, kueue-specs,
#                                   taucluster, multikueue) or scenario
#   AUTO=1 ./scenario.sh --upstream the walkthrough, then the known defects of Kueue v0.19.2 and the Cluster
#                                   Autoscaler 1.36.1 (scenarios/upstream/)
#   ./scenario.sh upstream          only those; `.venv/bin/tau-demo scenario list` shows every scenario
#   ./scenario.sh kueue-specs       Kueue v0.19.2's own provisioning specs, end to end (`tau-demo kueue-specs` runs
#                                   them under both autoscalers and writes docs/kueue-specs.md)
#   ./scenario.sh multikueue        on `tau-demo cluster up --multikueue`: a manager and two capacity-aware workers
#                                   (docs/multikueue.md); only this group runs on a manager
#   ./scenario.sh --autoscaler real the real Cluster Autoscaler answers (`tau-demo real-ca`; needs
#                                   `tau-demo toolchain ensure --with-real-ca`); also TAU_DEMO_AUTOSCALER=real
#   ./scenario.sh --ui              also serve the live page (`tau-demo ui`) and print its address
# Starts the autoscaler and the deadline controller in the background unless they already
# run (e.g. `tau-demo fake-ca` in another terminal), and stops only what it started.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/tau-demo ] || { echo "scenario.sh: run ./setup.sh first" >&2; exit 1; }
exec .venv/bin/tau-demo scenario run "$@"
