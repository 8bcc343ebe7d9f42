#!/usr/bin/env bash
# The kind path of `tau-demo cluster attach` (docs/taucluster.md): a cluster the harness did not build.
#
#   1. its administrator, with plain commands: `kind create cluster` (this machine's node image and config: see
#      README.md here), the ProvisioningRequest CRD, Kueue v0.19.2's release manifests (imagePullPolicy
#      IfNotPresent: no registry here), KWOK's in-cluster controller and its stages, then the profile's Kueue
#      objects from the plain files manifests/namespaces.yaml and manifests/kueue-objects.yaml;
#   2. the harness: `tau-demo cluster attach --mode adopt`, then `--mode external` (each with `--autoscaler fake`:
#      KWOK's nodes), `./scenario.sh success timeout-deadline race-timeout-wins` on it, `tau-demo cluster down`;
#   3. the cluster is what its administrator left: no label of ours, no TauCluster CRD, no namespace of ours.
#
#   tests/kind/attach.sh             (KEEP=1 keeps the cluster; NAME=... picks its name; TAU_DEMO_KIND_WORK=DIR puts
#                                     its kubeconfig and the harness's state in DIR, an empty directory, instead of a
#                                     new mktemp one: ./test.sh --kind then checks no process of DIR is left)
#
# Needs: a Docker engine (tests/kind/docker-engine.sh start), the node image (tests/kind/build-node-image.sh), the
# toolchain with kind (`tau-demo toolchain ensure --with-kind`), ./setup.sh's .venv.  Part of ./test.sh's kind path
# (`./test.sh --kind`, the function kind_path); its run is quoted in docs/taucluster.md.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${TAU_DEMO_CACHE:-$HOME/.cache/tau-demo}
NAME=${NAME:-tau-kind-attach}
NODE_IMAGE=${TAU_DEMO_KIND_NODE_IMAGE:-tau-demo/kind-node:v1.36.3}
KUEUE_IMAGE=registry.k8s.io/kueue/kueue:v0.19.2
KWOK_IMAGE=registry.k8s.io/kwok/kwok:v0.8.0
KUEUE_DEV_IMAGE=us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main
export PATH=$CACHE/kind-v0.32.0/bin:$CACHE/kubectl-v1.36.3/bin:$PATH
if [ -n "${TAU_DEMO_KIND_WORK:-}" ]; then
  WORK=$TAU_DEMO_KIND_WORK; mkdir -p "$WORK"
  [ -z "$(ls -A "$WORK")" ] || { echo "attach.sh: TAU_DEMO_KIND_WORK=$WORK is not empty" >&2; exit 1; }
else
  WORK=$(mktemp -d /tmp/tau-kind-attach.XXXXXX)
fi
export KUBECONFIG=$WORK/kubeconfig
export TAU_DEMO_STATE=$WORK/state          # the harness's state: the attached cluster is its `tau-demo`

T0=$SECONDS
say() { printf '[kind-attach %dm%02ds] %s\n' $(((SECONDS - T0) / 60)) $(((SECONDS - T0) % 60)) "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
finish() {
  local rc=$?
  "$REPO/.venv/bin/tau-demo" cluster down >/dev/null 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then
    say "kept cluster $NAME (KUBECONFIG=$KUBECONFIG)"
  else
    kind delete cluster --name "$NAME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    say "cluster $NAME deleted"
  fi
  [ $rc -eq 0 ] && say "PASSED" || say "FAILED (exit $rc)"
}
for t in kind kubectl; do command -v $t >/dev/null || fail "$t not in $CACHE: run tau-demo toolchain ensure --with-kind"; done
[ -x "$REPO/.venv/bin/tau-demo" ] || fail "run ./setup.sh first (the .venv)"
docker image inspect "$NODE_IMAGE" >/dev/null 2>&1 || fail "no node image $NODE_IMAGE: tests/kind/build-node-image.sh"

trap finish EXIT
# ------------------------------------------------------------------ 1. the administrator
t=$SECONDS
kind delete cluster --name "$NAME" >/dev/null 2>&1 || true
kind create cluster --name "$NAME" --image "$NODE_IMAGE" --config "$HERE/cluster-config.yaml" --wait 3m
kind load docker-image "$KUEUE_IMAGE" "$KWOK_IMAGE" --name "$NAME"
say "kind create cluster, kind load docker-image: $((SECONDS - t))s"

t=$SECONDS
kubectl apply --server-side -f "$CACHE"/autoscaler-apis-*/share/provisioningrequests.yaml
# kubectl wait fails at once ("status.conditions accessor error") on a CRD read before its first condition: retry
for _ in $(seq 60); do
  kubectl wait --for=condition=Established crd/provisioningrequests.autoscaling.x-k8s.io --timeout=1s >/dev/null 2>&1 && break
  sleep 1
done
kubectl wait --for=condition=Established crd/provisioningrequests.autoscaling.x-k8s.io --timeout=5s
sed -e "s#$KUEUE_DEV_IMAGE#$KUEUE_IMAGE#" \
    -e "\#image: $KUEUE_IMAGE#{n;s#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#}" \
    "$CACHE/kueue-manifests-v0.19.2/share/kueue-manifests.yaml" > "$WORK/kueue.yaml"
grep -A1 "image: $KUEUE_IMAGE" "$WORK/kueue.yaml" | grep -q 'imagePullPolicy: IfNotPresent' || fail "could not set Kueue's imagePullPolicy"
kubectl apply --server-side -f "$WORK/kueue.yaml" >/dev/null
kubectl -n kueue-system wait deploy/kueue-controller-manager --for=condition=Available --timeout=5m
say "Kueue v0.19.2 from its release manifests, Available: $((SECONDS - t))s ($(kubectl -n kueue-system get pods \
  -l control-plane=controller-manager -o jsonpath='{range .items[*]}{.metadata.name}: {.status.containerStatuses[0].restartCount} restart(s){end}'))"

t=$SECONDS
kubectl apply --server-side -f "$CACHE/kwok-manifests-v0.8.0/share/kwok-in-cluster.yaml" >/dev/null
kubectl apply --server-side -f "$CACHE/kwok-manifests-v0.8.0/share/stages/node-heartbeat-with-lease.yaml" \
  -f "$CACHE/kwok-manifests-v0.8.0/share/stages/pod-ready.yaml" -f "$CACHE/kwok-manifests-v0.8.0/share/stages/pod-delete.yaml" \
  -f "$REPO/manifests/kwok/node-initialize.yaml" -f "$REPO/manifests/kwok/pod-complete.yaml" >/dev/null
kubectl -n kube-system wait deploy/kwok-controller --for=condition=Available --timeout=3m
say "KWOK v0.8.0 and its stages: $((SECONDS - t))s"

# Kueue's webhook answers a little after its Deployment is Available
for i in $(seq 60); do
  kubectl apply -f "$REPO/manifests/namespaces.yaml" -f "$REPO/manifests/kueue-objects.yaml" >/dev/null 2>&1 && break
  sleep 2
done
kubectl apply -f "$REPO/manifests/namespaces.yaml" -f "$REPO/manifests/kueue-objects.yaml"
kubectl wait --for=condition=Active clusterqueue/gpu-a100 --timeout=120s
say "the administrator's Kueue objects (plain kubectl apply) Active"
labels_before=$(kubectl get resourceflavors,provisioningrequestconfigs,admissionchecks,clusterqueues -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.labels}{"\n"}{end}'; kubectl -n demo get localqueues -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.labels}{"\n"}{end}')

# ------------------------------------------------------------------ 2. the harness
for mode in adopt external; do
  t=$SECONDS
  "$REPO/.venv/bin/tau-demo" cluster attach --kubeconfig "$KUBECONFIG" --mode "$mode" --autoscaler fake
  say "attached in $mode mode: $((SECONDS - t))s"
  t=$SECONDS
  (cd "$REPO" && AUTO=1 ./scenario.sh success timeout-deadline race-timeout-wins) | tee "$WORK/scenarios-$mode.txt"
  say "success, timeout-deadline, race-timeout-wins in $mode mode: $((SECONDS - t))s"
  grep -q "left behind: nothing" "$WORK/scenarios-$mode.txt" || fail "the scenarios left something behind"
  "$REPO/.venv/bin/tau-demo" cluster down
  # ---------------------------------------------------------------- 3. given back
  labels_after=$(kubectl get resourceflavors,provisioningrequestconfigs,admissionchecks,clusterqueues -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.labels}{"\n"}{end}'; kubectl -n demo get localqueues -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.labels}{"\n"}{end}')
  [ "$labels_after" = "$labels_before" ] || fail "the Kueue objects' labels are not as the administrator left them: $labels_after"
  ! kubectl get crd tauclusters.tau-demo.io >/dev/null 2>&1 || fail "the TauCluster CRD was left behind"
  ! kubectl get namespace tau-demo-system >/dev/null 2>&1 || fail "the namespace tau-demo-system was left behind"
  say "given back ($mode): the Kueue objects as the administrator left them; no CRD, namespace or marker of ours"
done
