#!/usr/bin/env bash
# Fresh machine -> a healthy demo cluster: virtualenv, project, pinned toolchain, cluster.
#   TAU_DEMO_BACKEND=auto|kwok|kind   (default auto: kind when a Docker engine answers)
#   TAU_DEMO_CACHE=...                (default ~/.cache/tau-demo: binaries, version-keyed)
set -euo pipefail
cd "$(dirname "$0")"
backend=${TAU_DEMO_BACKEND:-auto}
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "setup.sh: $python not found; install Python >= 3.11" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  "$python" -m venv .venv
fi
echo "[setup] installing the project into .venv"
.venv/bin/python -m pip install -q -e '.[test]'
with_kind=()
if [ "$backend" = kind ] || { [ "$backend" = auto ] && docker info >/dev/null 2>&1; }; then with_kind=(--with-kind); fi
echo "[setup] ensuring the pinned toolchain (a cold build takes about 15 min on 2 cores; warm: seconds)"
.venv/bin/tau-demo toolchain ensure "${with_kind[@]}"
.venv/bin/tau-demo toolchain versions "${with_kind[@]}"
echo "[setup] bringing the cluster up"
.venv/bin/tau-demo cluster up --backend "$backend"
