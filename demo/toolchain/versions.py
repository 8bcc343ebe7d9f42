"""Every pinned version, in one place.

Kueue must be exactly v0.19.2 and Kubernetes a v1.36 patch release.  The Go module
proxy serves k8s.io/kubernetes v1.36.0 (Kueue's own library pin) as well as later
patches; the control plane uses v1.36.3, the patch the control-plane recipe was
written for, with every staging module replaced by its published v0.36.3.
"""

KUBERNETES = "v1.36.3"          # kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
KUBERNETES_STAGING = "v0.36.3"  # the published k8s.io/* staging modules matching KUBERNETES
ETCD = "v3.6.14"
KWOK = "v0.8.0"                 # kwok and kwokctl
KUEUE = "v0.19.2"
KUEUE_COMMIT = "8eab68778fc1b52affe165fdf5af29d1e9b4f3cb"
KUEUE_BUILD_DATE = "2026-08-20T14:33:19Z"
# The ProvisioningRequest API module that Kueue v0.19.2 requires (its go.mod).
AUTOSCALER_APIS = "v0.0.0-20240830133931-adfbe7e45277"
# kind for the Docker path: v0.32.0 defaults to a Kubernetes v1.36.1 node image.
KIND = "v0.32.0"
KIND_NODE_IMAGE = "kindest/node:v1.36.1@sha256:3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5"
KUEUE_IMAGE = f"registry.k8s.io/kueue/kueue:{KUEUE}"
KWOK_IMAGE = f"registry.k8s.io/kwok/kwok:{KWOK}"

ACTIONLINT = "v1.7.12"       # lints .github/workflows (the kind smoke workflow) in the unit tests

GO_MIN = (1, 26)

# The real Cluster Autoscaler, kwok cloud provider only (`tau-demo toolchain ensure --with-real-ca`).
# The Go module proxy refuses the CA module itself, so it is built from a source tree: the directory or
# .tar.xz named by TAU_DEMO_CA_SOURCE, else a shallow git clone of the tag.
CLUSTER_AUTOSCALER = "1.36.1"
CLUSTER_AUTOSCALER_MODULE = "k8s.io/autoscaler/cluster-autoscaler"
CLUSTER_AUTOSCALER_TAG = "cluster-autoscaler-1.36.1"
CLUSTER_AUTOSCALER_COMMIT = "35e8a280425c76a4040f57ae0fa232a952c02024"
CLUSTER_AUTOSCALER_GIT = "https://github.com/kubernetes/autoscaler"
# sha256 of the tag's cluster-autoscaler/ directory as made by
# `git archive --format=tar --prefix=autoscaler/ cluster-autoscaler-1.36.1 cluster-autoscaler | xz -6`
CLUSTER_AUTOSCALER_TARBALL_SHA256 = "5fcc8467a29d6cec5f89757653ad90a198e1775d5109b28c699dbed7a3eb8d66"
