#!/usr/bin/env bash
# End-to-end check of the offline kind path on this machine:
#   Docker engine -> node image -> kind cluster -> system pods Running, a plain pod runs ->
#   kind load Kueue/KWOK images -> Kueue v0.19.2 release manifests applied server-side ->
#   kueue-controller-manager Available -> cluster deleted.
#
#   tests/kind/smoke.sh            (KEEP=1 keeps the cluster; NAME=... picks its name)
#
# Needs the project's toolchain cache (tau-demo toolchain ensure --with-kind): kind, kubectl,
# the Kueue binary and its rendered manifests, KWOK, the ProvisioningRequest CRD.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${TAU_DEMO_CACHE:-$HOME/.cache/tau-demo}
NAME=${NAME:-tau-kind-smoke}
NODE_IMAGE=${TAU_DEMO_KIND_NODE_IMAGE:-tau-demo/kind-node:v1.36.3}
KUEUE_IMAGE=registry.k8s.io/kueue/kueue:v0.19.2
KWOK_IMAGE=registry.k8s.io/kwok/kwok:v0.8.0
KUEUE_DEV_IMAGE=us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main
export PATH=$CACHE/kind-v0.32.0/bin:$CACHE/kubectl-v1.36.3/bin:$PATH
WORK=$(mktemp -d /tmp/tau-kind-smoke.XXXXXX)
export KUBECONFIG=$WORK/kubeconfig

T0=$SECONDS
say() { printf '[kind-smoke %dm%02ds] %s\n' $(((SECONDS - T0) / 60)) $(((SECONDS - T0) % 60)) "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
finish() {
  local rc=$?
  if [ $rc -ne 0 ]; then
    say "diagnostics:"
    kubectl get pods -A -o wide 2>/dev/null >&2 || true
    kubectl get events -A --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then
    say "kept cluster $NAME (KUBECONFIG=$KUBECONFIG)"
  else
    kind delete cluster --name "$NAME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    say "cluster $NAME deleted"
  fi
  [ $rc -eq 0 ] && say "PASSED" || true
}
for t in kind kubectl; do command -v $t >/dev/null || fail "$t not in $CACHE: run tau-demo toolchain ensure --with-kind"; done

"$HERE/docker-engine.sh" start
"$HERE/build-node-image.sh"

trap finish EXIT
kind delete cluster --name "$NAME" >/dev/null 2>&1 || true
t=$SECONDS
kind create cluster --name "$NAME" --image "$NODE_IMAGE" --config "$HERE/cluster-config.yaml" \
  --kubeconfig "$KUBECONFIG" --wait 3m
say "kind create cluster: $((SECONDS - t))s"

t=$SECONDS
kind load docker-image "$KUEUE_IMAGE" "$KWOK_IMAGE" --name "$NAME"
say "kind load docker-image: $((SECONDS - t))s"

t=$SECONDS
for sel in k8s-app=kube-dns app=kindnet k8s-app=kube-proxy; do
  kubectl -n kube-system wait pod -l "$sel" --for=condition=Ready --timeout=180s >/dev/null || fail "pods $sel not Ready"
done
kubectl -n local-path-storage wait pod -l app=local-path-provisioner --for=condition=Ready --timeout=120s >/dev/null \
  || fail "local-path-provisioner not Ready"
kubectl run smoke-plain --image=registry.k8s.io/pause:3.10.2 --image-pull-policy=Never --restart=Never >/dev/null
kubectl wait pod/smoke-plain --for=condition=Ready --timeout=120s >/dev/null || fail "a plain pod did not run"
kubectl run smoke-dns --image=docker.io/kindest/local-path-helper:v20260131-7181c60a --image-pull-policy=Never \
  --restart=Never --command -- /bin/busybox nslookup kubernetes.default.svc.cluster.local >/dev/null
kubectl wait pod/smoke-dns --for=jsonpath='{.status.phase}'=Succeeded --timeout=120s >/dev/null \
  || { kubectl logs smoke-dns >&2 || true; fail "cluster DNS (CoreDNS through its Service) does not answer"; }
kubectl delete pod smoke-plain smoke-dns --wait=false >/dev/null
say "CoreDNS, kindnet, kube-proxy, local-path Ready; a plain pod ran; cluster DNS answers: $((SECONDS - t))s"

t=$SECONDS
kubectl apply --server-side -f "$CACHE"/autoscaler-apis-*/share/provisioningrequests.yaml >/dev/null
# Kueue's config/default as the release manifests.yaml is built (the image), and IfNotPresent for
# the controller: its `imagePullPolicy: Always` makes the kubelet contact registry.k8s.io even
# though `kind load` put the image in the node
sed -e "s#$KUEUE_DEV_IMAGE#$KUEUE_IMAGE#" \
    -e "\#image: $KUEUE_IMAGE#{n;s#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#}" \
    "$CACHE/kueue-manifests-v0.19.2/share/kueue-manifests.yaml" > "$WORK/kueue.yaml"
grep -A1 "image: $KUEUE_IMAGE" "$WORK/kueue.yaml" | grep -q 'imagePullPolicy: IfNotPresent' || fail "could not set Kueue's imagePullPolicy"
kubectl apply --server-side -f "$WORK/kueue.yaml" >/dev/null
kubectl -n kueue-system wait deploy/kueue-controller-manager --for=condition=Available --timeout=5m >/dev/null \
  || fail "kueue-controller-manager not Available"
say "Kueue v0.19.2 Available: $((SECONDS - t))s"
kubectl -n kueue-system logs deploy/kueue-controller-manager | grep -m1 '"gitVersion"' | grep -o '"gitVersion":"[^"]*"' >&2 || true

t=$SECONDS
kubectl apply --server-side -f "$CACHE/kwok-manifests-v0.8.0/share/kwok-in-cluster.yaml" >/dev/null
kubectl -n kube-system wait deploy/kwok-controller --for=condition=Available --timeout=3m >/dev/null || fail "kwok-controller not Available"
say "KWOK v0.8.0 in-cluster controller Available: $((SECONDS - t))s"
