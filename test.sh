#!/usr/bin/env bash
# Every test, the way CI runs it (.ci/run is `./test.sh` and nothing else): unit tests on plain data (nothing built,
# no network) and the mutation gate over the pure modules, both in the background; the README's quick start as
# written (`./setup.sh && AUTO=1 ./scenario.sh`, which must pass and leave nothing behind); the attach tests; then
# every other cluster test against a real control plane, real Kueue v0.19.2 and real KWOK, as three sessions side by
# side, each on a cluster of its own; the kind path (a Docker engine, the kind backend's walkthrough and `cluster
# attach` on kind) once only the last of those sessions runs, and the sampled gate beside it; state
# in temporary directories, so a demo cluster you have running is left alone.  Every stage runs to its end whatever
# a stage before it showed, and one failed test never hides another (no -x): the closing lines
# give each stage's verdict, and the exit code is 1 if any stage failed.  Nothing is skipped: a missing toolchain
# or a cluster that cannot start fails the run.  The toolchain includes the real cluster-autoscaler, built from
# $TAU_DEMO_CA_SOURCE (the vendored tarball ../shared/vendor/cluster-autoscaler-1.36.1.tar.xz when it is there:
# the Go module proxy refuses the CA module itself; without it `toolchain ensure --with-real-ca` clones the tag).
#   ./test.sh                 everything, as above (CI)
#   ./test.sh --unit          unit tests only
#   ./test.sh --mutation      mutation testing of the pure modules (tests/mutation/report.py; docs/testing.md); a whole
#                             run of source whose passing verdicts are cached reads them (--fresh runs mutmut anyway)
#   ./test.sh --cluster [pytest args]
#                             the toolchain, then the cluster tests as one session (e.g. --cluster -k race)
#   ./test.sh --cluster --shards 3 [pytest args]
#                             the cluster stage as three pytest sessions side by side, each on a cluster of its own,
#                             by file (tests/cluster/conftest.py SHARD_OF); each one's output shown whole, in order;
#                             fails if any fails
#   (--skip-unit is the old name of --cluster)
#   ./test.sh --kind          the kind path only (kind_path below): Debian's Docker engine, the node image built
#                             without a registry, the README's laptop commands on the kind backend, `cluster attach`
#                             on a plain `kind create cluster`; fails (never skips) where no Docker engine can run
#   ./test.sh --sampled       the sampled gate over the controllers that do I/O (sampled_gate below)
#   TAU_DEMO_TEST_BACKEND=kind ./test.sh --cluster   the cluster tests on a kind cluster (needs a Docker engine;
#                             on machines without a registry see tests/kind/README.md)
set -euo pipefail
cd "$(dirname "$0")"
if [ -z "${TAU_DEMO_CA_SOURCE:-}" ]; then
  for tarball in ../shared/vendor/cluster-autoscaler-1.36.1.tar.xz /work/shared/vendor/cluster-autoscaler-1.36.1.tar.xz; do
    if [ -f "$tarball" ]; then export TAU_DEMO_CA_SOURCE="$(cd "$(dirname "$tarball")" && pwd)/$(basename "$tarball")"; break; fi
  done
fi
# the locked Python packages (requirements.lock), installed again only when the lock or pyproject.toml changed
./venv.sh

unit_tests() {
  echo "[test] pyflakes (unused imports and names, undefined names)"
  .venv/bin/python -m pyflakes k8s fake_ca demo scenarios cli tests bench || return
  echo "[test] unit tests"
  .venv/bin/python -m pytest tests/unit -q -p no:cacheprovider
}

toolchain_for_cluster_tests() {
  echo "[test] toolchain"
  local backend=${TAU_DEMO_TEST_BACKEND:-kwok} with_kind=()
  [ "$backend" = kind ] && with_kind=(--with-kind)
  .venv/bin/tau-demo toolchain ensure --with-actionlint --with-real-ca "${with_kind[@]}" || return
  .venv/bin/tau-demo toolchain versions --with-real-ca || return
  # the live page's browser test (tests/cluster/test_ui.py) drives Debian's chromium through chromium-driver
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    echo "[test] installing Debian's chromium and chromium-driver with apt-get (for tests/cluster/test_ui.py)"
    local sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
    if ! { "${sudo[@]}" apt-get update -q && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q chromium chromium-driver; }; then
      echo "[test] cannot install chromium and chromium-driver (apt-get failed above): install them, then run ./test.sh again" >&2
      return 1
    fi
  fi
  echo "[test] browser: $(/usr/bin/chromium --version 2>/dev/null), $(/usr/bin/chromedriver --version 2>/dev/null | cut -d' ' -f1-2)"
}

# (each function returns at its first failing command itself: `set -e` does not hold in a function called from a
# `||` list, as the stages below call them)
# cluster_tests SHARDS [pytest args]: the cluster stage, one session or three side by side
cluster_tests() {
  local shards=$1; shift
  toolchain_for_cluster_tests || return
  local backend=${TAU_DEMO_TEST_BACKEND:-kwok}
  local state=${TAU_DEMO_TEST_STATE:-$(mktemp -d /tmp/tau-demo-test.XXXXXX)}
  if [ "$shards" = 1 ]; then
    echo "[test] cluster tests on the $backend backend (state in $state)"
    local one=0
    TAU_DEMO_STATE="$state" .venv/bin/python -m pytest tests/cluster -q -p no:cacheprovider --durations=30 "$@" || one=$?
    state_done "$state" "$one"
    return "$one"
  fi
  # sessions side by side, each with a state directory (so a cluster and controllers) of its own
  echo "[test] cluster tests on the $backend backend, $shards sessions side by side (states in $state/shard-N)"
  local pids=() i
  for i in $(seq "$shards"); do
    mkdir -p "$state/shard-$i"
    TAU_DEMO_STATE="$state/shard-$i" TAU_DEMO_TEST_SHARD="$i/$shards" \
      .venv/bin/python -m pytest tests/cluster -q -p no:cacheprovider --durations=15 "$@" \
      >"$state/shard-$i.log" 2>&1 &
    pids+=($!)
  done
  # ON_ONE_SESSION_LEFT: a command run once only one session is still running (the every-stage flow starts the kind
  # path then, beside the last session alone)
  if [ -n "${ON_ONE_SESSION_LEFT:-}" ]; then
    local alive p
    while :; do
      alive=0
      for p in "${pids[@]}"; do if kill -0 "$p" 2>/dev/null; then alive=$((alive + 1)); fi; done
      [ "$alive" -le 1 ] && break
      sleep 5
    done
    "$ON_ONE_SESSION_LEFT"
  fi
  local rc=0 empty=0 code
  for i in $(seq "$shards"); do
    code=0
    wait "${pids[$((i - 1))]}" || code=$?
    echo "[test] session $i of $shards (exit $code):"
    cat "$state/shard-$i.log"
    # 5: no test of this session was selected (a -k or -m that picks only the other sessions' files)
    if [ "$code" = 5 ]; then empty=$((empty + 1)); elif [ "$code" != 0 ]; then rc=1; fi
  done
  if [ "$empty" = "$shards" ]; then echo "[test] no cluster test was selected in any session" >&2; rc=1; fi
  state_done "$state" "$rc"
  return "$rc"
}

# state_done STATE CODE: the cluster stage's state directory (its sessions' output, the controllers' logs; each
# cluster is already down) removed after a pass, kept and named after a failure; one given by TAU_DEMO_TEST_STATE
# is the caller's, and stays
state_done() {
  if [ -n "${TAU_DEMO_TEST_STATE:-}" ]; then return; fi
  if [ "$2" = 0 ]; then rm -rf "$1"; else echo "[test] the sessions' output and the controllers' logs are kept in $1"; fi
}

# The kind path, as a laptop user with Docker takes it (setup.sh picks the kind backend wherever Docker answers), on a
# machine without a container registry (tests/kind/README.md): Debian's Docker engine, installed with apt-get where
# missing and started by hand (tests/kind/docker-engine.sh start: no systemd here); the kind node image and the Kueue
# and KWOK images built from the Go module proxy and Debian's packages, cached by version in
# ${TAU_DEMO_CACHE:-~/.cache/tau-demo} (tests/kind/build-node-image.sh: seconds once cached); then side by side, each
# in a state directory of its own:
#   - the README's laptop commands `TAU_DEMO_BACKEND=kind ./setup.sh && AUTO=1 ./scenario.sh`, then `tau-demo cluster
#     down` (this machine's node image and kind config given by TAU_DEMO_KIND_NODE_IMAGE and TAU_DEMO_KIND_CONFIG,
#     as tests/kind/README.md says: a laptop pulls kindest/node instead);
#   - tests/kind/attach.sh: `tau-demo cluster attach` (Adopt, then External) on a plain `kind create cluster` whose
#     Kueue comes from its release manifests, three scenarios on it, then the cluster given back as it was;
# then no container of either kind cluster and no process of either state directory may be left.  A Docker engine that
# answered before the stage stays running; one the stage started is stopped at its end, pass or fail (nothing of the
# stage left running, and `./setup.sh`'s auto choice, kind wherever Docker answers, is as it was before).  A machine
# where no Docker engine can be installed and started fails this stage: it is never skipped.
# The sampled gate over the three controllers that do I/O (tests/mutation/sampled.py --gate; docs/testing.md): the
# recorded kill rates against the floor, then one recorded kill of each controller judged again, taken in turn, by its
# killing test on a cluster of its own (state in a temporary directory, removed after a pass).
sampled_gate() {
  toolchain_for_cluster_tests || return
  local state left rc=0 t0=$SECONDS
  state=$(mktemp -d /tmp/tau-demo-sampled.XXXXXX) || return
  TAU_DEMO_STATE="$state" .venv/bin/python tests/mutation/sampled.py --gate || rc=$?
  if left=$(pgrep -af -- "$state"); then echo "the sampled gate left processes behind:"; echo "$left"; rc=1; fi
  state_done "$state" "$rc"
  echo "[test] the sampled gate: $([ "$rc" = 0 ] && echo passed || echo FAILED) in $((SECONDS - t0))s"
  return "$rc"
}

KIND_WALKTHROUGH_CLUSTER=tau-demo         # setup.sh's cluster (demo/cluster/state.py DEFAULT_NAME)
KIND_ATTACH_CLUSTER=tau-kind-attach       # tests/kind/attach.sh's
kind_path() {
  local engine_was_up=0 rc=0
  timeout 10 docker info >/dev/null 2>&1 && engine_was_up=1
  kind_path_run || rc=$?
  if [ "$engine_was_up" = 0 ] && tests/kind/docker-engine.sh status >/dev/null 2>&1; then
    echo "[test] the kind path: stopping the Docker engine it started (tests/kind/docker-engine.sh stop)"
    tests/kind/docker-engine.sh stop || rc=1
  fi
  return "$rc"
}
kind_path_run() {
  local t0=$SECONDS t
  echo "[test] the kind path: a Docker engine from Debian's packages (tests/kind/docker-engine.sh start)"
  if ! tests/kind/docker-engine.sh start; then
    echo "[test] FAILED: the kind path needs a Docker engine and none could be installed and started here (see above);" \
      "this stage is never skipped" >&2
    return 1
  fi
  echo "[test] the kind path: the toolchain with kind (kind, kubectl, the Kueue and KWOK binaries and manifests)"
  .venv/bin/tau-demo toolchain ensure --with-kind || return
  echo "[test] the kind path: the node image, built without a registry, cached by version (tests/kind/build-node-image.sh)"
  t=$SECONDS
  tests/kind/build-node-image.sh || return
  echo "[test] the kind path: images ready in $((SECONDS - t))s"
  local name
  for name in "$KIND_WALKTHROUGH_CLUSTER" "$KIND_ATTACH_CLUSTER"; do
    if [ -n "$(docker ps -aq --filter "label=io.x-k8s.kind.cluster=$name")" ]; then
      echo "[test] FAILED: a kind cluster named $name already exists (an earlier run's, or someone else's):" \
        "\`kind delete cluster --name $name\` removes it" >&2
      return 1
    fi
  done
  local dir; dir=$(mktemp -d /tmp/tau-demo-kind.XXXXXX) || return
  mkdir -p "$dir/walkthrough" || return
  echo "[test] the kind path: the walkthrough on the kind backend and the attach test, side by side (states in $dir)"
  t=$SECONDS
  (
    export TAU_DEMO_STATE="$dir/walkthrough" TAU_DEMO_KIND_NODE_IMAGE=tau-demo/kind-node:v1.36.3 \
      TAU_DEMO_KIND_CONFIG="$PWD/tests/kind/cluster-config.yaml"
    rc=0
    echo "[test] TAU_DEMO_BACKEND=kind ./setup.sh && AUTO=1 ./scenario.sh"
    TAU_DEMO_BACKEND=kind ./setup.sh && AUTO=1 ./scenario.sh || rc=$?
    echo "[test] the kind walkthrough's teardown: tau-demo cluster down"
    .venv/bin/tau-demo cluster down || rc=1
    exit "$rc"
  ) >"$dir/walkthrough.log" 2>&1 &
  local walkthrough_pid=$!
  TAU_DEMO_KIND_WORK="$dir/attach" NAME="$KIND_ATTACH_CLUSTER" tests/kind/attach.sh >"$dir/attach.log" 2>&1 &
  local attach_pid=$!
  local rc=0 code
  code=0; wait "$walkthrough_pid" || code=$?
  echo "[test] the kind path: TAU_DEMO_BACKEND=kind ./setup.sh && AUTO=1 ./scenario.sh, then cluster down (exit $code," \
    "$((SECONDS - t))s):"
  cat "$dir/walkthrough.log"
  [ "$code" = 0 ] || rc=1
  code=0; wait "$attach_pid" || code=$?
  echo "[test] the kind path: tests/kind/attach.sh (exit $code, $((SECONDS - t))s):"
  cat "$dir/attach.log"
  [ "$code" = 0 ] || rc=1
  echo "[test] the kind path: nothing may be left (kind clusters $KIND_WALKTHROUGH_CLUSTER and $KIND_ATTACH_CLUSTER," \
    "processes of $dir)"
  for name in "$KIND_WALKTHROUGH_CLUSTER" "$KIND_ATTACH_CLUSTER"; do
    local containers; containers=$(docker ps -a --filter "label=io.x-k8s.kind.cluster=$name" --format '{{.Names}}') || rc=1
    if [ -n "$containers" ]; then echo "the kind path left the kind cluster $name behind: $containers"; rc=1; fi
  done
  local left
  if left=$(pgrep -af -- "$dir"); then echo "the kind path left processes behind:"; echo "$left"; rc=1; fi
  rm -rf "$dir"
  echo "[test] the kind path: $([ "$rc" = 0 ] && echo passed || echo FAILED) in $((SECONDS - t0))s"
  return "$rc"
}

case "${1:-}" in
  --unit) unit_tests; exit ;;
  --kind) kind_path; exit ;;
  --sampled) sampled_gate; exit ;;
  --mutation) shift; exec .venv/bin/python tests/mutation/report.py "$@" ;;
  --cluster|--skip-unit)
    shift
    shards=1
    if [ "${1:-}" = --shards ]; then shards=${2:-}; shift 2 || true; fi
    case "$shards" in 1|3) ;; *) echo "test.sh: --shards takes 1 or 3, not '$shards'" >&2; exit 2 ;; esac
    cluster_tests "$shards" "$@"; exit ;;
  "") ;;
  *) echo "test.sh: unknown argument '$1' (--unit, --mutation, --cluster [--shards 3] [pytest args], --kind, --sampled, or nothing: every stage)" >&2
     exit 2 ;;
esac

# ------------------------------------------------------------------------------------------------ every stage
stage() { echo; echo "[test $(date +%H:%M:%S)] $*"; }
verdicts=()
failed=0
# verdict NAME CODE: what a stage showed, kept for the closing lines
verdict() {
  if [ "$2" = 0 ]; then verdicts+=("passed  $1"); else verdicts+=("FAILED  $1 (exit $2)"); failed=$((failed + 1)); fi
}
pgroups=()
trap 'for g in "${pgroups[@]}"; do kill -- -"$g" 2>/dev/null || true; done' EXIT

# The unit tests (one CPU for about 45 s) run in the background beside the quick start, which mostly waits on its
# cluster, and their verdict is read at the end.  At the normal CPU priority, not the mutation gate's nice 19: some of
# them bound a wall-clock wait (an interrupt acted on within 1.5 s, a subprocess within 30 s), which a starved run
# could miss.
stage "unit tests: started in the background, their verdict at the end"
unit_log=$(mktemp /tmp/tau-demo-unit.XXXXXX)
setsid bash -c 'exec ./test.sh --unit' >"$unit_log" 2>&1 &
unit_pid=$!
pgroups+=("$unit_pid")

# The mutation gate is CPU-bound; the stages after it mostly wait on the cluster (boots, loops, deadlines).
# So it runs beside them at the lowest CPU priority (it takes only the CPU they leave idle; its per-mutant
# limit is CPU time, not wall time) and its verdict is read at the end, whatever happened meanwhile. setsid gives it
# a session of its own, so that it is stopped whole on exit; with the kernel's autogroup scheduling a session is
# also a CPU group of its own, which nice alone does not lower (a cold run measured the toolchain's build at 19.5
# min beside it, against 10.6 min alone), so the group itself is set to nice 19 (/proc/self/autogroup) where the
# kernel has it.
stage "mutation testing of the pure modules: started in the background at nice 19, its verdict at the end"
mutation_log=$(mktemp /tmp/tau-demo-mutation.XXXXXX)
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true; exec nice -n 19 ./test.sh --mutation' \
  >"$mutation_log" 2>&1 &
mutation_pid=$!
pgroups+=("$mutation_pid")

# The quick start on the default backend, kwok (no Docker): where no Docker engine answers, which is this machine's
# state outside the kind stage below, `./setup.sh` picks it by itself; TAU_DEMO_BACKEND=kwok makes that choice
# explicit, so that a Docker engine that happens to answer (then setup.sh would pick kind) cannot turn this stage into
# a second kind run. The kind backend's own run is the kind path, its own stage below.
stage "the README's quick start: ./setup.sh && AUTO=1 ./scenario.sh on the default backend, kwok (its own cluster state)"
quickstart_state=$(mktemp -d /tmp/tau-demo-quickstart.XXXXXX)
rc=0; TAU_DEMO_STATE="$quickstart_state" TAU_DEMO_BACKEND=kwok ./setup.sh || rc=$?
setup_rc=$rc

# Once the toolchain is built (by setup.sh, above), the tests marked `attach` bring a cluster of their own up, attach
# it and run three of the walkthrough's scenarios on it in two modes: mostly waiting on the same demo timers as the
# walkthrough, so they run beside it, in a state directory of their own; their verdict is read after the cluster stage.
stage "the attach tests: started in the background, beside the walkthrough (their own cluster state)"
attach_state=$(mktemp -d /tmp/tau-demo-attach.XXXXXX)
attach_log=$(mktemp /tmp/tau-demo-attach-log.XXXXXX)
TAU_DEMO_STATE="$attach_state" setsid .venv/bin/python -m pytest tests/cluster -m attach -q -p no:cacheprovider \
  --durations=5 >"$attach_log" 2>&1 &
attach_pid=$!
pgroups+=("$attach_pid")

if [ "$setup_rc" = 0 ]; then
  TAU_DEMO_STATE="$quickstart_state" AUTO=1 ./scenario.sh || rc=$?
else
  echo "[test] ./setup.sh failed (exit $setup_rc): the walkthrough cannot run"
fi
stage "the quick start's teardown: tau-demo cluster down, then nothing of it may run on"
TAU_DEMO_STATE="$quickstart_state" .venv/bin/tau-demo cluster down || rc=$?
if left=$(pgrep -af -- "$quickstart_state"); then
  echo "the quick start left processes behind:"; echo "$left"; rc=1
fi
rm -rf "$quickstart_state"
verdict "the quick start (./setup.sh && AUTO=1 ./scenario.sh, then cluster down)" "$rc"

# The kind path starts once only one of the cluster stage's sessions is still running (not before: two kind nodes'
# control planes beside three kwok clusters would crowd two cores), or after the stage if none was left alone (a stage
# that could not start); the toolchain's Kubernetes build is then in the Go cache the node image reuses.  It runs in the
# background, its verdict read after the sampled gate's start; the mutation gate still runs beside it.
kind_pid=""
start_kind_path() {
  [ -z "$kind_pid" ] || return 0
  stage "the kind path: a laptop user's TAU_DEMO_BACKEND=kind ./setup.sh && AUTO=1 ./scenario.sh, and cluster attach on a plain kind cluster (Docker engine from Debian's packages, the node image built without a registry): started in the background, beside the cluster stage's last session"
  kind_log=$(mktemp /tmp/tau-demo-kind-log.XXXXXX)
  setsid bash -c 'exec ./test.sh --kind' >"$kind_log" 2>&1 &
  kind_pid=$!
  pgroups+=("$kind_pid")
}

# The walkthrough's scenarios ran in the quick start, so the cluster stage leaves them out (pytest marker
# `walkthrough`) instead of running them a second time, and the races' extra rounds too (`repeat`).
stage "every other cluster test: the walkthrough's scenarios (above), their repeats and the attach tests (beside the quick start) left out, as three sessions side by side, each on a cluster of its own"
rc=0; ON_ONE_SESSION_LEFT=start_kind_path cluster_tests 3 -m "not walkthrough and not repeat and not attach" || rc=$?
verdict "the cluster tests (three sessions)" "$rc"
start_kind_path

# The sampled gate waits mostly on its cluster tests, as the kind path on its kind clusters: it runs beside it, its
# cluster tests at nice 10 (tests/mutation/sampled.py), and its verdict is read after it.
stage "the sampled gate over the three controllers that do I/O: started in the background, beside the kind path (its own cluster)"
sampled_log=$(mktemp /tmp/tau-demo-sampled-log.XXXXXX)
setsid bash -c 'exec ./test.sh --sampled' >"$sampled_log" 2>&1 &
sampled_pid=$!
pgroups+=("$sampled_pid")

stage "the kind path, run beside the cluster stage's last session and the sampled gate: its verdict"
rc=0
wait "$kind_pid" || rc=$?
cat "$kind_log"
rm -f "$kind_log"
verdict "the kind path (./test.sh --kind)" "$rc"

stage "the sampled gate, run beside the kind path: its verdict (recorded kill rates, one recorded kill of each controller judged again by its killing test)"
rc=0
wait "$sampled_pid" || rc=$?
cat "$sampled_log"
rm -f "$sampled_log"
verdict "the sampled gate (./test.sh --sampled)" "$rc"

stage "the attach tests, run beside the quick start: their verdict"
rc=0
wait "$attach_pid" || rc=$?
cat "$attach_log"
if left=$(pgrep -af -- "$attach_state"); then
  echo "the attach tests left processes behind:"; echo "$left"; rc=1
fi
rm -rf "$attach_state" "$attach_log"
verdict "the attach tests" "$rc"

stage "the unit tests, run beside the quick start: their verdict"
rc=0
wait "$unit_pid" || rc=$?
cat "$unit_log"
rm -f "$unit_log"
verdict "unit tests" "$rc"

stage "mutation testing of the pure modules: its verdict"
rc=0
wait "$mutation_pid" || rc=$?
cat "$mutation_log"
rm -f "$mutation_log"
verdict "the mutation gate" "$rc"

stage "verdicts"
for v in "${verdicts[@]}"; do echo "  $v"; done
if [ "$failed" != 0 ]; then echo "[test] $failed stage(s) failed"; exit 1; fi
echo "[test] every stage passed"
