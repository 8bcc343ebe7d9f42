#!/usr/bin/env bash
# Build, with nothing pulled from a container registry, everything the kind backend needs offline:
#
#   tau-demo/kind-node:v1.36.3              a kind node image (Debian bookworm + systemd 252) for
#                                           `kind create cluster --image tau-demo/kind-node:v1.36.3`,
#                                           every image kubeadm v1.36.3, kindnet and kind's storage
#                                           need already in its containerd (namespace k8s.io)
#   registry.k8s.io/kueue/kueue:v0.19.2     Kueue's image (entrypoint /manager, user 65532)
#   registry.k8s.io/kwok/kwok:v0.8.0        KWOK's image (entrypoint /usr/local/bin/kwok)
#                                           (the last two for `kind load docker-image`)
#
# Binaries come from the Go module proxy (compiled here), Debian packages from the Debian mirror;
# images are assembled with docker import / docker commit, and loaded into the node's containerd
# with `ctr images import` (as kind's own node-image build does, minus its registry fetches).
#
# Built once and cached by version under ${TAU_DEMO_CACHE:-~/.cache/tau-demo}/kind-node-v1.36.3
# (binaries, the debootstrap rootfs, logs, a stamp); a rerun with the images present takes seconds.
#
#   tests/kind/build-node-image.sh            build what is missing
#   tests/kind/build-node-image.sh --force    rebuild the images (cached binaries are reused)
#
# Needs: root, a running Docker engine (tests/kind/docker-engine.sh start), Go >= 1.26, and the
# project's toolchain cache for Kueue and KWOK (`tau-demo toolchain ensure --with-kind`).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${TAU_DEMO_CACHE:-$HOME/.cache/tau-demo}

# ------------------------------------------------------------------------------------ versions
K8S=v1.36.3                 # demo/versions.py KUBERNETES
KIND=v0.32.0                # demo/versions.py KIND: its base-image files and default manifests
KUEUE=v0.19.2               # demo/versions.py KUEUE
KWOK=v0.8.0                 # demo/versions.py KWOK
# what kind v0.32.0's images/base/Dockerfile builds (all served by the Go module proxy)
CONTAINERD=v2.3.1
RUNC=v1.4.2
CRICTL=v1.36.0
CNI_PLUGINS=v1.9.1
# kind v0.32.0 builds local-path-provisioner v0.0.34; the proxy refuses it, v0.0.30 is served
LOCAL_PATH_PROVISIONER=v0.0.30
DEBIAN_SUITE=bookworm       # systemd 252: kind's own trixie base (systemd 257) is hostile to cgroup v1

NODE_IMAGE=${TAU_DEMO_KIND_NODE_IMAGE:-tau-demo/kind-node:$K8S}
KUEUE_IMAGE=registry.k8s.io/kueue/kueue:$KUEUE
KWOK_IMAGE=registry.k8s.io/kwok/kwok:$KWOK
W=$CACHE/kind-node-$K8S
BIN=$W/bin
LOGS=$W/logs
KUEUE_BIN=$CACHE/kueue-$KUEUE/bin/kueue
KWOK_BIN=$CACHE/kwok-$KWOK/bin/kwok
TOOLCHAIN_K8S_BIN=$CACHE/kubernetes-$K8S/bin

FORCE=0
[ "${1:-}" = --force ] && FORCE=1

T0=$SECONDS
say() { printf '[node-image %dm%02ds] %s\n' $(((SECONDS - T0) / 60)) $(((SECONDS - T0) % 60)) "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# run_step DESCRIPTION LOGNAME CMD...: output to $LOGS/LOGNAME.log, a heartbeat every 30 s
run_step() {
  local desc=$1 logf=$LOGS/$2.log; shift 2
  local start=$SECONDS n=0 pid
  say "$desc"
  "$@" >"$logf" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1; n=$((n + 1))
    (( n % 30 == 0 )) && say "  ... still $desc ($((SECONDS - start))s)"
  done
  if ! wait "$pid"; then
    tail -40 "$logf" >&2
    say "ERROR: $desc failed (full log: $logf)"
    return 1
  fi
  say "  done ($((SECONDS - start))s): $desc"
}

# build containers to remove however the script ends
BUILD_CONTAINERS=()
cleanup() { [ ${#BUILD_CONTAINERS[@]} -eq 0 ] || docker rm -f "${BUILD_CONTAINERS[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT

img_exists() { docker image inspect "$1" >/dev/null 2>&1; }
img_label() { docker image inspect -f "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }

# ------------------------------------------------------------------------------- prerequisites
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, docker)"
timeout 20 docker info >/dev/null 2>&1 || die "docker does not answer: start it with tests/kind/docker-engine.sh start"
command -v go >/dev/null || die "Go not found (Go >= 1.26 is needed)"
mkdir -p "$W" "$BIN" "$LOGS"

export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
GOMODCACHE=$(go env GOMODCACHE)
NICE=(nice -n 10)

# inputs of the images: when any changes, the images are rebuilt (binaries stay cached by version)
INPUT_HASH=$( { cat "${BASH_SOURCE[0]}" "$HERE"/kindnetd/* "$HERE"/images/*; stat -c '%s %Y' "$KUEUE_BIN" "$KWOK_BIN" 2>/dev/null || true
  echo "$K8S $KIND $CONTAINERD $RUNC $CRICTL $CNI_PLUGINS $LOCAL_PATH_PROVISIONER $DEBIAN_SUITE $NODE_IMAGE"; } | sha256sum | cut -c1-16)
STAMP=$W/images.stamp

up_to_date() {
  [ "$FORCE" = 0 ] && [ -f "$STAMP" ] || return 1
  local want; want=$(cat "$STAMP")
  local have; have="$INPUT_HASH $(docker image inspect -f '{{.Id}}' "$NODE_IMAGE" 2>/dev/null) $(docker image inspect -f '{{.Id}}' "$KUEUE_IMAGE" 2>/dev/null) $(docker image inspect -f '{{.Id}}' "$KWOK_IMAGE" 2>/dev/null)"
  [ "$want" = "$have" ]
}
if up_to_date; then
  say "up to date: $NODE_IMAGE, $KUEUE_IMAGE, $KWOK_IMAGE (cache $W)"
  exit 0
fi

APT_PKGS=(debootstrap busybox-static libseccomp-dev gcc libc6-dev pkg-config jq python3)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  run_step "apt-get install ${missing[*]}" apt \
    sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends ${missing[*]}"
fi
[ -x "$KUEUE_BIN" ] || die "$KUEUE_BIN missing: build the toolchain first (tau-demo toolchain ensure --with-kind)"
[ -x "$KWOK_BIN" ] || die "$KWOK_BIN missing: build the toolchain first (tau-demo toolchain ensure --with-kind)"

# sources of kind v0.32.0 (base image files, default manifests and their image names)
KIND_SRC=$(go mod download -json "sigs.k8s.io/kind@$KIND" | jq -r .Dir)
[ -d "$KIND_SRC/images/base/files" ] || die "sigs.k8s.io/kind@$KIND has no images/base/files"

# ------------------------------------------------------------------------------------- binaries
go_install() {  # go_install NAME MODULE@VERSION "ldflags" cgo tags PKG... -> $BIN (via a .partial dir)
  local name=$1 modver=$2 ldflags=$3 cgo=$4 tags=$5; shift 5
  local partial=$W/.partial-$name
  rm -rf "$partial"; mkdir -p "$partial"
  local pkgs=() p
  for p in "$@"; do pkgs+=("$p@${modver#*@}"); done
  run_step "building $name ${modver#*@}" "go-$name" env GOBIN="$partial" CGO_ENABLED="$cgo" \
    "${NICE[@]}" go install -trimpath -tags "$tags" -ldflags "$ldflags" "${pkgs[@]}"
  mv "$partial"/* "$BIN"/
  rmdir "$partial"
  echo "${modver#*@}" > "$BIN/.$name.version"
}
have_version() { [ -f "$BIN/.$1.version" ] && [ "$(cat "$BIN/.$1.version")" = "$2" ]; }

# the version variables hack/lib/version.sh sets; the same as demo/toolchain.py kubernetes_ldflags()
kubernetes_ldflags() {
  local version=$1 commit=$2 major minor flags="-s -w" pkg
  major=$(echo "${version#v}" | cut -d. -f1); minor=$(echo "${version#v}" | cut -d. -f2)
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$version"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=$commit -X $pkg.buildDate=2026-01-01T00:00:00Z"
  done
  echo "$flags"
}

k8s_bin_ok() {  # the binary reports $K8S
  local b=$1 v
  [ -x "$b" ] || return 1
  case "${b##*/}" in
    kubeadm) v=$("$b" version -o short 2>/dev/null) ;;
    kubectl) v=$("$b" version --client -o json 2>/dev/null | jq -r .clientVersion.gitVersion 2>/dev/null) ;;
    *) v=$("$b" --version 2>/dev/null | awk '{print $2}') ;;
  esac
  [ "$v" = "$K8S" ]
}

build_kubernetes() {
  # a copy of the project's wrapper module (gomod/k8s): k8s.io/kubernetes v1.36.3 with every
  # staging module replaced by its published v0.36.3; -mod=mod adds the go.sum lines the node
  # binaries need to the copy, never to the repository
  local src=$W/src/k8s want=(kubeadm kubelet kubectl kube-proxy kube-apiserver kube-controller-manager kube-scheduler)
  local todo=() b
  for b in "${want[@]}"; do
    k8s_bin_ok "$BIN/$b" && continue
    # same module, flags and ldflags as the control-plane toolchain: reuse its binaries
    if k8s_bin_ok "$TOOLCHAIN_K8S_BIN/$b"; then
      cp "$TOOLCHAIN_K8S_BIN/$b" "$BIN/$b"; continue
    fi
    todo+=("$b")
  done
  [ ${#todo[@]} -eq 0 ] && return 0
  mkdir -p "$src"
  cp "$REPO/gomod/k8s/go.mod" "$REPO/gomod/k8s/go.sum" "$src/"
  local info; info=$(cd "$src" && go list -mod=mod -m -json k8s.io/kubernetes)
  [ "$(jq -r .Version <<<"$info")" = "$K8S" ] || die "gomod/k8s/go.mod does not pin k8s.io/kubernetes $K8S"
  local commit; commit=$(jq -r '.Origin.Hash // empty' <<<"$info"); commit=${commit:-0000000000000000000000000000000000000000}
  local partial=$W/.partial-k8s; rm -rf "$partial"; mkdir -p "$partial"
  local pkgs=(); for b in "${todo[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  run_step "building ${todo[*]} $K8S (cold: several minutes on 2 cores)" go-kubernetes \
    env -C "$src" CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath -tags selinux,notest,grpcnotrace \
    -ldflags "$(kubernetes_ldflags "$K8S" "$commit")" -o "$partial/" "${pkgs[@]}"
  mv "$partial"/* "$BIN"/; rmdir "$partial"
}

build_etcd() {  # $1: version wanted by kubeadm (v3.6.8); etcd's go.mod replaces its siblings: wrapper
  local v=$1 src=$W/src/etcd-$1
  have_version etcd "$v" && return 0
  mkdir -p "$src"
  if [ ! -f "$src/go.mod" ]; then
    (cd "$src" && go mod init example.invalid/etcd-node >/dev/null 2>&1 && \
      go get "go.etcd.io/etcd/server/v3@$v" "go.etcd.io/etcd/api/v3@$v" "go.etcd.io/etcd/client/pkg/v3@$v" \
        "go.etcd.io/etcd/client/v3@$v" "go.etcd.io/etcd/pkg/v3@$v" >"$LOGS/etcd-mod.log" 2>&1) \
      || { rm -f "$src/go.mod"; tail "$LOGS/etcd-mod.log" >&2; die "resolving etcd $v"; }
  fi
  local partial=$W/.partial-etcd; rm -rf "$partial"; mkdir -p "$partial"
  run_step "building etcd $v" go-etcd env -C "$src" CGO_ENABLED=0 "${NICE[@]}" go build -mod=mod -trimpath \
    -ldflags "-s -w" -o "$partial/etcd" go.etcd.io/etcd/server/v3
  mv "$partial/etcd" "$BIN/etcd"; rmdir "$partial"; echo "$v" > "$BIN/.etcd.version"
}

build_binaries() {
  build_kubernetes
  KUBEADM_IMAGES=$("$BIN/kubeadm" config images list --kubernetes-version "$K8S")
  ETCD_TAG=$(grep '/etcd:' <<<"$KUBEADM_IMAGES" | cut -d: -f2)          # 3.6.8-0
  COREDNS_TAG=$(grep '/coredns:' <<<"$KUBEADM_IMAGES" | cut -d: -f2)    # v1.14.2
  PAUSE_TAG=$(grep '/pause:' <<<"$KUBEADM_IMAGES" | cut -d: -f2)        # 3.10.2
  [ -n "$ETCD_TAG" ] && [ -n "$COREDNS_TAG" ] && [ -n "$PAUSE_TAG" ] || die "unexpected kubeadm image list: $KUBEADM_IMAGES"
  build_etcd "v${ETCD_TAG%-*}"
  have_version coredns "$COREDNS_TAG" || go_install coredns "github.com/coredns/coredns@$COREDNS_TAG" \
    "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_TAG" 0 "" github.com/coredns/coredns
  have_version containerd "$CONTAINERD" || go_install containerd "github.com/containerd/containerd/v2@$CONTAINERD" \
    "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2" \
    0 "no_aufs no_zfs no_btrfs no_devmapper" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  have_version runc "$RUNC" || go_install runc "github.com/opencontainers/runc@$RUNC" \
    "-s -w -X main.version=${RUNC#v}" 1 "seccomp urfave_cli_no_docs" github.com/opencontainers/runc
  have_version crictl "$CRICTL" || go_install crictl "sigs.k8s.io/cri-tools@$CRICTL" \
    "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL" 0 "" sigs.k8s.io/cri-tools/cmd/crictl
  have_version cni-plugins "$CNI_PLUGINS" || go_install cni-plugins "github.com/containernetworking/plugins@$CNI_PLUGINS" \
    "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_PLUGINS" 0 "" \
    github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/main/loopback \
    github.com/containernetworking/plugins/plugins/main/ptp github.com/containernetworking/plugins/plugins/meta/portmap
  have_version local-path-provisioner "$LOCAL_PATH_PROVISIONER" || go_install local-path-provisioner \
    "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER" "-s -w -X main.VERSION=$LOCAL_PATH_PROVISIONER" 0 "" \
    github.com/rancher/local-path-provisioner
  run_step "building tau-kindnetd (tests/kind/kindnetd)" go-kindnetd \
    env -C "$HERE/kindnetd" CGO_ENABLED=0 "${NICE[@]}" go build -trimpath -ldflags "-s -w" -o "$BIN/kindnetd" .
  run_step "building pause (static C)" cc-pause gcc -Os -static -o "$BIN/pause" "$HERE/images/pause.c"
  strip "$BIN/pause"
  # each version read whole first: `--version | head -1 | grep -q` under pipefail fails when grep or head closes the
  # pipe before the binary has written all its lines (SIGPIPE), however right the version is
  local runc_says containerd_says
  runc_says=$("$BIN/runc" --version 2>&1) || die "runc --version failed: $runc_says"
  [[ "${runc_says%%$'\n'*}" == *"${RUNC#v}"* ]] || die "runc reports ${runc_says%%$'\n'*}"
  containerd_says=$("$BIN/containerd" --version 2>&1) || die "containerd --version failed: $containerd_says"
  [[ "$containerd_says" == *"$CONTAINERD"* ]] || die "containerd reports $containerd_says"
}

# ---------------------------------------------------------------------------------- base images
debian_mirror() {
  local m
  m=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null \
      | grep -oE 'https?://[^ ]+/debian/?$' | head -1 || true)
  echo "${m:-http://deb.debian.org/debian}"
}

base_debian() {  # tau-demo/debian:bookworm from debootstrap --variant=minbase
  local img=tau-demo/debian:$DEBIAN_SUITE tar=$W/debian-$DEBIAN_SUITE-rootfs.tar
  img_exists "$img" && return 0
  if [ ! -s "$tar" ]; then
    local mirror rootfs=$W/tmp/rootfs-$DEBIAN_SUITE; mirror=$(debian_mirror)
    rm -rf "$rootfs"; mkdir -p "$rootfs"
    run_step "debootstrap --variant=minbase $DEBIAN_SUITE from $mirror" debootstrap \
      "${NICE[@]}" debootstrap --variant=minbase "$DEBIAN_SUITE" "$rootfs" "$mirror"
    local sec=${mirror%/debian*}/debian-security
    cat > "$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $DEBIAN_SUITE main
deb $mirror $DEBIAN_SUITE-updates main
deb $sec $DEBIAN_SUITE-security main
EOF
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$tar.partial" . && mv "$tar.partial" "$tar"
    rm -rf "$rootfs"
  fi
  run_step "docker import $img" import-debian sh -c "docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD [\"/bin/bash\"]' --change 'LABEL tau-demo.inputs=debootstrap' - '$img' < '$tar'"
}

# commit_from BASE NEW LOGNAME SCRIPT [docker-commit --change ...]: run SCRIPT in a container of BASE, commit
commit_from() {
  local base=$1 new=$2 logname=$3 script=$4; shift 4
  local c=tau-build-$logname-$$
  BUILD_CONTAINERS+=("$c")
  docker rm -f "$c" >/dev/null 2>&1 || true
  docker run -d --name "$c" "$base" sleep infinity >/dev/null   # as CMD: a commit's CMD change replaces it
  run_step "building $new" "$logname" docker exec -i "$c" bash -euxc "$script" || exit 1
  docker commit "$@" "$c" "$new" >/dev/null
  docker rm -f "$c" >/dev/null
}

base_node() {  # kind v0.32.0's images/base, on Debian bookworm; the build tools are added later
  local img=tau-demo/kind-base:$DEBIAN_SUITE hash
  hash=$( { declare -f base_node; echo "$KIND $DEBIAN_SUITE"; } | sha256sum | cut -c1-16)
  [ "$(img_label "$img" tau-demo.inputs)" = "$hash" ] && return 0
  local c=tau-build-kind-base-$$
  BUILD_CONTAINERS+=("$c")
  docker rm -f "$c" >/dev/null 2>&1 || true
  docker run -d --name "$c" --entrypoint sleep "tau-demo/debian:$DEBIAN_SUITE" infinity >/dev/null
  # kind's files, with kind's modes: scripts 0755, the rest 0644
  local stage=$W/tmp/base-files; rm -rf "$stage"; mkdir -p "$stage"
  cp -r "$KIND_SRC/images/base/files/." "$stage/"; chmod -R u+w "$stage"
  find "$stage" -type d -exec chmod 0755 {} +; find "$stage" -type f -exec chmod 0644 {} +
  chmod 0755 "$stage"/usr/local/bin/* "$stage"/kind/bin/*
  tar -C "$stage" --owner=0 --group=0 -c . | docker exec -i "$c" tar -C / --no-overwrite-dir -x
  rm -rf "$stage"
  # the RUN steps of kind's images/base/Dockerfile (package set and unit handling unchanged)
  local script='
export DEBIAN_FRONTEND=noninteractive
clean-install systemd conntrack iptables nftables iproute2 ethtool util-linux mount kmod \
  libseccomp2 pigz fuse-overlayfs nfs-common open-iscsi e2fsprogs bash ca-certificates curl jq procps
find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f /lib/systemd/system/multi-user.target.wants/*
rm -f /etc/systemd/system/*.wants/*
rm -f /lib/systemd/system/local-fs.target.wants/*
rm -f /lib/systemd/system/sockets.target.wants/*udev*
rm -f /lib/systemd/system/sockets.target.wants/*initctl*
rm -f /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init
systemctl enable kubelet.service
systemctl enable containerd.service
systemctl enable undo-mount-hacks.service
systemctl mask systemd-binfmt.service
mkdir -p /etc/kubernetes/manifests /opt/cni/bin
systemctl --version | head -1
'
  run_step "building $img (kind $KIND images/base on $DEBIAN_SUITE: apt-get in a container)" kind-base \
    docker exec -i "$c" bash -euxc "$script" || exit 1
  docker commit --change 'ENV container=docker' \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change "LABEL tau-demo.inputs=$hash" "$c" "$img" >/dev/null
  docker rm -f "$c" >/dev/null
  # systemd stops on SIGRTMIN+3; `docker commit --change` (Docker 20.10) cannot set STOPSIGNAL, a
  # one-line build FROM the local image can (legacy builder: it pulls nothing that is present)
  local ctx=$W/tmp/stopsignal; rm -rf "$ctx"; mkdir -p "$ctx"
  printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$img" > "$ctx/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$img" "$ctx" >/dev/null 2>"$LOGS/stopsignal.log" \
    || { cat "$LOGS/stopsignal.log" >&2; die "docker build (STOPSIGNAL) failed"; }
  rm -rf "$ctx"
  [ "$(docker image inspect -f '{{.Config.StopSignal}}' "$img")" = "SIGRTMIN+3" ] || die "$img lacks STOPSIGNAL SIGRTMIN+3"
}

base_iptables() {  # Debian + iptables (+ the wrapper that follows the node's backend): kube-proxy, kindnetd
  local img=tau-demo/debian-iptables:$DEBIAN_SUITE hash
  hash=$( { declare -f base_iptables; cat "$HERE/images/iptables-wrapper"; echo "$DEBIAN_SUITE"; } | sha256sum | cut -c1-16)
  [ "$(img_label "$img" tau-demo.inputs)" = "$hash" ] && return 0
  local wrapper; wrapper=$(base64 -w0 < "$HERE/images/iptables-wrapper")
  commit_from "tau-demo/debian:$DEBIAN_SUITE" "$img" debian-iptables "
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends iptables conntrack ipset iproute2 kmod ebtables
apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/debconf/* /usr/share/doc/* /usr/share/man/*
echo $wrapper | base64 -d > /usr/sbin/iptables-wrapper; chmod 0755 /usr/sbin/iptables-wrapper
for c in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  ln -sf iptables-wrapper /usr/sbin/\$c
done
" --change 'CMD ["/bin/bash"]' --change "LABEL tau-demo.inputs=$hash"
}

# --------------------------------------------------------------------------- component images
static_image() {  # static_image NAME FILES_DIR [docker-import --change ...]: a distroless-like image
  local name=$1 dir=$2; shift 2
  mkdir -p "$dir/etc" "$dir/tmp" "$dir/home/nonroot" "$dir/etc/ssl/certs"
  chmod 1777 "$dir/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$dir/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' > "$dir/etc/group"
  printf 'hosts: files dns\n' > "$dir/etc/nsswitch.conf"
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/"
  chown 65532:65532 "$dir/home/nonroot"
  tar -C "$dir" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL tau-demo.inputs=$INPUT_HASH" --change 'LABEL tau-demo.built-locally=true' \
    "$@" - "$name" >/dev/null
}

image_from() {  # image_from BASE NAME SRC DEST [docker-commit --change ...]: BASE plus one file
  local base=$1 name=$2 src=$3 dest=$4; shift 4
  local c; c=$(docker create "$base" /bin/true); BUILD_CONTAINERS+=("$c")
  docker cp "$src" "$c:$dest"
  docker commit "$@" --change "LABEL tau-demo.inputs=$INPUT_HASH" --change 'LABEL tau-demo.built-locally=true' "$c" "$name" >/dev/null
  docker rm "$c" >/dev/null
}

# kind's default manifests and their image names, read from kind's Go source (const_*.go)
kind_consts() {  # prints NAME<TAB>base64(value) for every string const in the given files
  python3 - "$@" <<'EOF'
import base64, re, sys
src = "".join(open(p).read() for p in sys.argv[1:])
tok = re.compile(r'`([^`]*)`|"((?:[^"\\]|\\.)*)"|([A-Za-z_]\w*)')
consts = {}
for m in re.finditer(r'^const\s+(\w+)\s*=\s*', src, re.M):
    name, pos, parts = m.group(1), m.end(), []
    while True:
        t = tok.match(src, pos)
        if not t:
            break
        if t.group(1) is not None:
            parts.append(t.group(1))
        elif t.group(2) is not None:
            parts.append(bytes(t.group(2), "utf-8").decode("unicode_escape"))
        else:
            parts.append(consts[t.group(3)])
        pos = t.end()
        p = re.match(r'\s*\+\s*', src[pos:])
        if not p:
            break
        pos += p.end()
    if parts:
        consts[name] = "".join(parts)
for k, v in consts.items():
    print(k + "\t" + base64.b64encode(v.encode()).decode())
EOF
}
kind_const() { grep "^$1	" <<<"$KIND_CONSTS" | cut -f2 | base64 -d; }

component_images() {
  trap cleanup EXIT   # run_step runs this in a subshell, which does not inherit the trap
  local t=$W/tmp/images
  rm -rf "$t"; mkdir -p "$t"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    mkdir -p "$t/$b/usr/local/bin"; cp "$BIN/$b" "$t/$b/usr/local/bin/"
    static_image "registry.k8s.io/$b:$K8S" "$t/$b" --change "ENTRYPOINT [\"/usr/local/bin/$b\"]"
  done
  image_from "tau-demo/debian-iptables:$DEBIAN_SUITE" "registry.k8s.io/kube-proxy:$K8S" "$BIN/kube-proxy" /usr/local/bin/kube-proxy \
    --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]'
  mkdir -p "$t/etcd/usr/local/bin" "$t/etcd/var/lib/etcd"; cp "$BIN/etcd" "$t/etcd/usr/local/bin/"
  static_image "registry.k8s.io/etcd:$ETCD_TAG" "$t/etcd" --change 'ENTRYPOINT ["/usr/local/bin/etcd"]'
  mkdir -p "$t/coredns"; cp "$BIN/coredns" "$t/coredns/coredns"
  static_image "registry.k8s.io/coredns/coredns:$COREDNS_TAG" "$t/coredns" --change 'ENTRYPOINT ["/coredns"]' --change 'EXPOSE 53 53/udp'
  mkdir -p "$t/pause"; cp "$BIN/pause" "$t/pause/pause"
  static_image "registry.k8s.io/pause:$PAUSE_TAG" "$t/pause" --change 'ENTRYPOINT ["/pause"]' --change 'USER 65535:65535'
  [ "$SANDBOX_IMAGE" != "registry.k8s.io/pause:$PAUSE_TAG" ] && docker tag "registry.k8s.io/pause:$PAUSE_TAG" "$SANDBOX_IMAGE"
  image_from "tau-demo/debian-iptables:$DEBIAN_SUITE" "$KINDNETD_IMAGE" "$BIN/kindnetd" /bin/kindnetd --change 'CMD ["/bin/kindnetd"]'
  mkdir -p "$t/lpp/usr/local/bin"; cp "$BIN/local-path-provisioner" "$t/lpp/usr/local/bin/"
  static_image "$STORAGE_PROVISIONER_IMAGE" "$t/lpp" --change 'ENTRYPOINT ["/usr/local/bin/local-path-provisioner"]'
  # the helper pod runs `sh` scripts that use mkdir and rm: a static busybox provides them
  mkdir -p "$t/helper/bin"; cp /bin/busybox "$t/helper/bin/busybox"
  for b in sh mkdir rm ls cat; do ln -s busybox "$t/helper/bin/$b"; done
  static_image "$STORAGE_HELPER_IMAGE" "$t/helper"
  # Kueue and KWOK, as upstream's images lay them out
  mkdir -p "$t/kueue"; cp "$KUEUE_BIN" "$t/kueue/manager"
  static_image "$KUEUE_IMAGE" "$t/kueue" --change 'ENTRYPOINT ["/manager"]' --change 'USER 65532:65532' --change 'WORKDIR /'
  mkdir -p "$t/kwok/usr/local/bin"; cp "$KWOK_BIN" "$t/kwok/usr/local/bin/kwok"
  static_image "$KWOK_IMAGE" "$t/kwok" --change 'ENTRYPOINT ["/usr/local/bin/kwok"]'
  rm -rf "$t"
}

# ------------------------------------------------------------------------------------ the node
assemble_node() {
  trap cleanup EXIT   # run_step runs this in a subshell, which does not inherit the trap
  local c=tau-build-kind-node-$$
  BUILD_CONTAINERS+=("$c")
  docker rm -f "$c" >/dev/null 2>&1 || true
  docker run -d --name "$c" --entrypoint sleep --security-opt seccomp=unconfined "tau-demo/kind-base:$DEBIAN_SUITE" infinity >/dev/null
  local b
  for b in kubeadm kubelet kubectl; do docker cp "$BIN/$b" "$c:/usr/bin/$b"; done
  for b in containerd ctr containerd-shim-runc-v2 crictl; do docker cp "$BIN/$b" "$c:/usr/local/bin/$b"; done
  docker cp "$BIN/runc" "$c:/usr/local/sbin/runc"
  for b in host-local loopback ptp portmap; do docker cp "$BIN/$b" "$c:/opt/cni/bin/$b"; done
  docker exec "$c" sh -c 'chown root:root /usr/bin/kube* /usr/local/bin/* /usr/local/sbin/runc /opt/cni/bin/*; chmod 0755 /usr/bin/kube* /usr/local/bin/* /usr/local/sbin/runc /opt/cni/bin/*'
  # what kind's base Dockerfile and node-image build write
  docker exec "$c" sh -c 'ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer| length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" | jq "del(.process.rlimits)" > /etc/containerd/cri-base.json'
  printf '%s' "$K8S" | docker exec -i "$c" sh -c 'cat > /kind/version'
  docker exec "$c" mkdir -p /kind/manifests
  kind_const defaultCNIManifest | docker exec -i "$c" sh -c 'cat > /kind/manifests/default-cni.yaml'
  kind_const defaultStorageManifest | docker exec -i "$c" sh -c 'cat > /kind/manifests/default-storage.yaml'
  docker exec "$c" sh -c 'containerd --version; runc --version | head -1; crictl --version; kubeadm version -o short; kubelet --version' \
    | sed 's/^/  node: /' >&2
  # load every image into the node's containerd, as kind's node-image build does
  docker exec "$c" bash -c 'nohup containerd >/var/log/containerd-build.log 2>&1 & echo $! > /tmp/containerd-build.pid'
  local i
  for i in $(seq 1 30); do docker exec "$c" ctr version >/dev/null 2>&1 && break; sleep 1; done
  docker exec "$c" ctr version >/dev/null || { docker exec "$c" cat /var/log/containerd-build.log >&2; die "containerd in the build container did not start"; }
  local images=($KUBEADM_IMAGES "$SANDBOX_IMAGE" "$KINDNETD_IMAGE" "$STORAGE_PROVISIONER_IMAGE" "$STORAGE_HELPER_IMAGE")
  local img
  for img in $(printf '%s\n' "${images[@]}" | sort -u); do
    docker save "$img" | docker exec -i "$c" ctr --namespace=k8s.io images import \
      --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >>"$LOGS/ctr-import.log" 2>&1 \
      || die "ctr images import $img failed (log: $LOGS/ctr-import.log)"
  done
  local have; have=$(docker exec "$c" ctr --namespace=k8s.io images ls -q)
  for img in $(printf '%s\n' "${images[@]}" | sort -u); do
    local full=$img; [[ $full == */*/* || $full == *.*/* ]] || full=docker.io/$full
    grep -qxF "$full" <<<"$have" || die "$full is not in the node's containerd after import: $have"
    say "  preloaded $full"
  done
  docker exec "$c" bash -c 'kill "$(cat /tmp/containerd-build.pid)"; for i in $(seq 1 20); do kill -0 "$(cat /tmp/containerd-build.pid)" 2>/dev/null || break; sleep 0.5; done; rm -rf /tmp/containerd-build.pid /var/log/containerd-build.log /run/containerd'
  docker commit \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change "LABEL tau-demo.inputs=$INPUT_HASH" --change "LABEL tau-demo.kubernetes=$K8S" \
    "$c" "$NODE_IMAGE" >/dev/null
  docker rm -f "$c" >/dev/null
}

# ----------------------------------------------------------------------------------------- main
say "cache $W; node image $NODE_IMAGE (inputs $INPUT_HASH)"
KIND_CONSTS=$(kind_consts "$KIND_SRC"/pkg/build/nodeimage/const_cni.go "$KIND_SRC"/pkg/build/nodeimage/const_storage.go)
KINDNETD_IMAGE=$(kind_const kindnetdImage)
STORAGE_PROVISIONER_IMAGE=$(kind_const storageProvisionerImage)
STORAGE_HELPER_IMAGE=$(kind_const storageHelperImage)
SANDBOX_IMAGE=$(grep -oE 'sandbox_image *= *"[^"]+"' "$KIND_SRC/images/base/files/etc/containerd/config.toml" | cut -d'"' -f2)
[ -n "$KINDNETD_IMAGE" ] && [ -n "$STORAGE_HELPER_IMAGE" ] && [ -n "$SANDBOX_IMAGE" ] || die "cannot read kind $KIND's image names"
[ -n "$(kind_const defaultCNIManifest)" ] || die "cannot read kind $KIND's default CNI manifest"

build_binaries
say "binaries ready in $BIN"
base_debian
base_node
base_iptables
run_step "assembling component images (kube-*, etcd $ETCD_TAG, coredns $COREDNS_TAG, pause, kindnetd, local-path, kueue, kwok)" \
  images component_images
run_step "assembling $NODE_IMAGE (binaries + preloaded images)" node assemble_node
# earlier builds of these images, now untagged (only images carrying this script's label)
docker image prune -f --filter label=tau-demo.inputs >/dev/null 2>&1 || true
echo "$INPUT_HASH $(docker image inspect -f '{{.Id}}' "$NODE_IMAGE") $(docker image inspect -f '{{.Id}}' "$KUEUE_IMAGE") $(docker image inspect -f '{{.Id}}' "$KWOK_IMAGE")" > "$STAMP"
say "built $NODE_IMAGE ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}')), $KUEUE_IMAGE, $KWOK_IMAGE"
say "next: kind create cluster --image $NODE_IMAGE --config $HERE/cluster-config.yaml"
