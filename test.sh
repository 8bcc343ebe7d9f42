#!/usr/bin/env bash
# All tests: unit tests on plain data (nothing built, no network), then cluster tests against a real
# control plane, real Kueue v0.19.2 and real KWOK.  The cluster tests bring up their own cluster
# (state in a temporary directory, so a demo cluster you have running is left alone) and tear it down.
# Nothing is skipped: a missing toolchain or a cluster that cannot start fails the run.  The toolchain
# includes the real cluster-autoscaler (from $TAU_DEMO_CA_SOURCE, see .ci/run), which one cluster test runs.
#   ./test.sh                 unit, then cluster tests
#   ./test.sh --unit          unit tests only
#   ./test.sh --skip-unit     the toolchain and the cluster tests only (.ci/run ran the unit tests first)
#   ./test.sh --mutation      mutation testing of the pure modules (tests/mutation/report.py; docs/testing.md)
#   ./test.sh [pytest args]   passed to the cluster stage (e.g. -k race)
#   TAU_DEMO_TEST_BACKEND=kind ./test.sh   the cluster tests on a kind cluster (needs a Docker engine;
#                             on machines without a registry see tests/kind/README.md)
set -euo pipefail
cd "$(dirname "$0")"
# the locked Python packages (requirements.lock), installed again only when the lock or pyproject.toml changed
toolchain/venv.sh
stage=all
if [ "${1:-}" = --unit ]; then stage=unit; shift; fi
if [ "${1:-}" = --skip-unit ]; then stage=cluster; shift; fi
if [ "${1:-}" = --mutation ]; then shift; exec .venv/bin/python tests/mutation/report.py "$@"; fi
if [ "$stage" != cluster ]; then
  echo "[test] pyflakes (unused imports and names, undefined names)"
  .venv/bin/python -m pyflakes k8s fake_ca demo scenarios cli tests bench
  echo "[test] unit tests"
  .venv/bin/python -m pytest tests/unit -q -p no:cacheprovider
fi
[ "$stage" = unit ] && exit 0
echo "[test] toolchain"
backend=${TAU_DEMO_TEST_BACKEND:-kwok}
with_kind=(); [ "$backend" = kind ] && with_kind=(--with-kind)
.venv/bin/tau-demo toolchain ensure --with-actionlint --with-real-ca "${with_kind[@]}"
.venv/bin/tau-demo toolchain versions --with-real-ca
# the live page's browser test (tests/cluster/test_ui.py) drives Debian's chromium through chromium-driver
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "[test] installing Debian's chromium and chromium-driver with apt-get (for tests/cluster/test_ui.py)"
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  if ! { "${sudo[@]}" apt-get update -q && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q chromium chromium-driver; }; then
    echo "[test] cannot install chromium and chromium-driver (apt-get failed above): install them, then run ./test.sh again" >&2
    exit 1
  fi
fi
echo "[test] browser: $(/usr/bin/chromium --version 2>/dev/null), $(/usr/bin/chromedriver --version 2>/dev/null | cut -d' ' -f1-2)"
export TAU_DEMO_STATE=${TAU_DEMO_TEST_STATE:-$(mktemp -d /tmp/tau-demo-test.XXXXXX)}
echo "[test] cluster tests on the $backend backend (state in $TAU_DEMO_STATE)"
.venv/bin/python -m pytest tests/cluster -q -p no:cacheprovider -x --durations=30 "$@"
