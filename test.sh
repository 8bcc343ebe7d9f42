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
#   ./test.sh --skip-unit --shards 3 [pytest args]
#                             the cluster stage as three pytest sessions side by side, each on a cluster of its own,
#                             by file (tests/cluster/conftest.py SHARD_OF); each one's output shown whole, in order;
#                             fails if any fails
#   TAU_DEMO_TEST_BACKEND=kind ./test.sh   the cluster tests on a kind cluster (needs a Docker engine;
#                             on machines without a registry see tests/kind/README.md)
set -euo pipefail
cd "$(dirname "$0")"
# the locked Python packages (requirements.lock), installed again only when the lock or pyproject.toml changed
toolchain/venv.sh
stage=all
shards=1
if [ "${1:-}" = --unit ]; then stage=unit; shift; fi
if [ "${1:-}" = --skip-unit ]; then stage=cluster; shift; fi
if [ "${1:-}" = --shards ]; then shards=${2:-}; shift 2 || true; fi
case "$shards" in 1|3) ;; *) echo "test.sh: --shards takes 1 or 3, not '$shards'" >&2; exit 2 ;; esac
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
if [ "$shards" = 1 ]; then
  echo "[test] cluster tests on the $backend backend (state in $TAU_DEMO_STATE)"
  exec .venv/bin/python -m pytest tests/cluster -q -p no:cacheprovider -x --durations=30 "$@"
fi
# sessions side by side, each with a state directory (so a cluster and controllers) of its own
echo "[test] cluster tests on the $backend backend, $shards sessions side by side (states in $TAU_DEMO_STATE/shard-N)"
pids=()
for i in $(seq "$shards"); do
  mkdir -p "$TAU_DEMO_STATE/shard-$i"
  TAU_DEMO_STATE="$TAU_DEMO_STATE/shard-$i" TAU_DEMO_TEST_SHARD="$i/$shards" \
    .venv/bin/python -m pytest tests/cluster -q -p no:cacheprovider -x --durations=15 "$@" \
    >"$TAU_DEMO_STATE/shard-$i.log" 2>&1 &
  pids+=($!)
done
rc=0
empty=0
for i in $(seq "$shards"); do
  code=0
  wait "${pids[$((i - 1))]}" || code=$?
  echo "[test] session $i of $shards (exit $code):"
  cat "$TAU_DEMO_STATE/shard-$i.log"
  # 5: no test of this session was selected (a -k or -m that picks only the other sessions' files)
  if [ "$code" = 5 ]; then empty=$((empty + 1)); elif [ "$code" != 0 ]; then rc=1; fi
done
if [ "$empty" = "$shards" ]; then echo "[test] no cluster test was selected in any session" >&2; rc=1; fi
exit "$rc"
