#!/usr/bin/env bash
# All tests: unit tests on plain data (nothing built, no network), then cluster tests against a real
# control plane, real Kueue v0.19.2 and real KWOK.  The cluster tests bring up their own cluster
# (state in a temporary directory, so a demo cluster you have running is left alone) and tear it down.
# Nothing is skipped: a missing toolchain or a cluster that cannot start fails the run.  The toolchain
# includes the real cluster-autoscaler (from $TAU_DEMO_CA_SOURCE, see .ci/run), which one cluster test runs.
#   ./test.sh                 unit, then cluster tests
#   ./test.sh --unit          unit tests only
#   ./test.sh --mutation      mutation testing of the pure modules (tests/mutation/report.py; docs/testing.md)
#   ./test.sh [pytest args]   passed to the cluster stage (e.g. -k race)
#   TAU_DEMO_TEST_BACKEND=kind ./test.sh   the cluster tests on a kind cluster (needs a Docker engine;
#                             on machines without a registry see tests/kind/README.md)
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$python" -m venv .venv; fi
# (re)install only when pyproject.toml changed since the last install, so a repeated run needs no network
stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  .venv/bin/python -m pip install -q -e '.[test]'
  rm -f .venv/.installed-* && touch "$stamp"
fi
stage=all
if [ "${1:-}" = --unit ]; then stage=unit; shift; fi
if [ "${1:-}" = --mutation ]; then shift; exec .venv/bin/python tests/mutation/report.py "$@"; fi
echo "[test] pyflakes (unused imports and names, undefined names)"
.venv/bin/python -m pyflakes demo fake_ca scenarios tests bench
echo "[test] unit tests"
.venv/bin/python -m pytest tests/unit -q -p no:cacheprovider
[ "$stage" = unit ] && exit 0
echo "[test] toolchain"
backend=${TAU_DEMO_TEST_BACKEND:-kwok}
with_kind=(); [ "$backend" = kind ] && with_kind=(--with-kind)
.venv/bin/tau-demo toolchain ensure --with-actionlint --with-real-ca "${with_kind[@]}"
.venv/bin/tau-demo toolchain versions --with-real-ca
export TAU_DEMO_STATE=${TAU_DEMO_TEST_STATE:-$(mktemp -d /tmp/tau-demo-test.XXXXXX)}
echo "[test] cluster tests on the $backend backend (state in $TAU_DEMO_STATE)"
.venv/bin/python -m pytest tests/cluster -q -p no:cacheprovider -x "$@"
