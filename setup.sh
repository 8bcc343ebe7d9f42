#!/usr/bin/env bash
# Fresh machine -> a healthy demo cluster: virtualenv, project, pinned toolchain, cluster.
#   TAU_DEMO_BACKEND=auto|kwok|kind   (default auto: kind when a Docker engine answers, else kwok)
#   TAU_DEMO_CACHE=...                (default ~/.cache/tau-demo: binaries, version-keyed)
# The kwok backend builds the whole control plane (cold: about 15 min on 2 cores, warm: seconds);
# the kind backend builds only what it uses: kubectl and kind (and renders the manifests).
set -euo pipefail
cd "$(dirname "$0")"
backend=${TAU_DEMO_BACKEND:-auto}
echo "[setup] .venv: the locked Python packages (requirements.lock) and the project"
./venv.sh
if [ "$backend" = auto ]; then
  if docker info >/dev/null 2>&1; then backend=kind; else backend=kwok; fi
  echo "[setup] backend: $backend (TAU_DEMO_BACKEND=auto)"
fi
echo "[setup] ensuring the pinned toolchain for the $backend backend"
.venv/bin/tau-demo toolchain ensure --backend "$backend"
.venv/bin/tau-demo toolchain versions --backend "$backend"
echo "[setup] bringing the cluster up"
.venv/bin/tau-demo cluster up --backend "$backend"
