#!/usr/bin/env bash
# Test-machine plumbing for the kind backend: a Docker engine on a machine without systemd.
#
#   tests/kind/docker-engine.sh start    install (idempotently) and start dockerd, wait for `docker info`
#   tests/kind/docker-engine.sh stop     stop the dockerd (and the containerd it started) by pid
#   tests/kind/docker-engine.sh status   say whether it runs and where its files are
#
# Environment:
#   TAU_DEMO_DOCKER_STATE   state dir (default /var/lib/tau-demo-docker): dockerd.pid, dockerd.log,
#                           the runc wrapper
#   TAU_DEMO_DOCKER_RUNTIME name the wrapper is registered under (default tau-runc)
#
# What and why:
# - Debian bookworm's docker.io (Docker 20.10, containerd 1.6, runc 1.1) plus iptables; no systemd is
#   PID 1 on these machines, so dockerd is started by hand in the background.
# - The VM's capability bounding set lacks CAP_SYS_RESOURCE (bit 24), so `docker run --privileged`
#   (every kind node) fails with "runc create failed: unable to apply caps: operation not permitted".
#   A wrapper removes CAP_SYS_RESOURCE from the OCI config (config.json on create/run, the --process
#   file on exec) and execs the real runc; it becomes dockerd's default runtime.  The wrapper is only
#   installed when the bounding set really lacks the capability; a laptop with Docker needs none of this.
set -euo pipefail

STATE=${TAU_DEMO_DOCKER_STATE:-/var/lib/tau-demo-docker}
RUNTIME=${TAU_DEMO_DOCKER_RUNTIME:-tau-runc}
PIDFILE=$STATE/dockerd.pid
LOG=$STATE/dockerd.log
WRAPPER=$STATE/runc-wrapper
CONTAINERD_PIDFILE=/var/run/docker/containerd/containerd.pid
PACKAGES=(docker.io iptables debootstrap jq)

say() { echo "[docker-engine] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts dockerd)"; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} with apt-get"
    apt-get update -q >/dev/null
    # no daemon is started by the package scripts here (no systemd; policy-rc.d refuses)
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  fi
  command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"
}

# the real runc that the wrapper execs: Debian's (/usr/sbin/runc), never the wrapper itself
real_runc() {
  local r
  for r in /usr/sbin/runc /usr/bin/runc; do [ -x "$r" ] && { echo "$r"; return; }; done
  die "runc not found (it comes with docker.io's dependency runc)"
}

lacks_cap_sys_resource() {
  local bnd
  bnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
  (( (0x$bnd >> 24 & 1) == 0 ))
}

install_wrapper() {
  local runc; runc=$(real_runc)
  mkdir -p "$STATE"
  cat > "$WRAPPER.tmp" <<EOF
#!/bin/bash
# runc wrapper (written by tests/kind/docker-engine.sh): drop CAP_SYS_RESOURCE, which this VM's
# capability bounding set lacks, from the OCI config, then exec the real runc.
REAL_RUNC=$runc
EOF
  cat >> "$WRAPPER.tmp" <<'EOF'
strip() {  # $1: a JSON file; $2: jq path of the capabilities object
  [ -f "$1" ] || return 0
  grep -q CAP_SYS_RESOURCE "$1" || return 0
  local t; t=$(mktemp "$1.XXXXXX") || return 0
  if jq -c "if $2 then $2 |= with_entries(.value |= (if type == \"array\" then map(select(. != \"CAP_SYS_RESOURCE\")) else . end)) else . end" "$1" > "$t"; then
    cat "$t" > "$1"
  fi
  rm -f "$t"
}
cmd="" bundle="" process="" prev=""
for a in "$@"; do
  case "$prev" in
    --bundle|-b) bundle=$a ;;
    --process|-p) process=$a ;;
  esac
  case "$a" in
    --bundle=*) bundle=${a#--bundle=} ;;
    --process=*) process=${a#--process=} ;;
  esac
  if [ -z "$cmd" ]; then
    case "$a" in create|run|exec) cmd=$a ;; esac
  fi
  prev=$a
done
case "$cmd" in
  create|run) strip "${bundle:-.}/config.json" .process.capabilities ;;
  exec) [ -n "$process" ] && strip "$process" .capabilities ;;
esac
exec "$REAL_RUNC" "$@"
EOF
  chmod 755 "$WRAPPER.tmp"
  mv "$WRAPPER.tmp" "$WRAPPER"
}

running_pid() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -q dockerd "/proc/$pid/comm" 2>/dev/null || return 1
  echo "$pid"
}

docker_answers() { timeout 10 docker info >/dev/null 2>&1; }

# Traffic that containers send to an address no container has (a pod talking to a Service IP
# before kube-proxy programmed it, say) follows the host's default route off the machine.  These
# machines may only talk to their own containers and the package mirrors: drop forwarded traffic to
# private and shared ranges on the uplink, except DNS to the host's own nameservers (containers on
# the default bridge use them).  TAU_DEMO_DOCKER_EGRESS_GUARD=0 leaves the firewall alone.
egress_guard() {
  [ "${TAU_DEMO_DOCKER_EGRESS_GUARD:-1}" = 1 ] || return 0
  local chain=TAU-DEMO-EGRESS uplink ns r
  uplink=$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
  [ -n "$uplink" ] || { say "no default route: no egress guard needed"; return 0; }
  iptables -w -N "$chain" 2>/dev/null || iptables -w -F "$chain"
  for ns in $(awk '$1 == "nameserver" {print $2}' /etc/resolv.conf | grep -v :); do
    iptables -w -A "$chain" -o "$uplink" -d "$ns" -p udp --dport 53 -j RETURN
    iptables -w -A "$chain" -o "$uplink" -d "$ns" -p tcp --dport 53 -j RETURN
  done
  for r in 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 100.64.0.0/10 169.254.0.0/16; do
    iptables -w -A "$chain" -o "$uplink" -d "$r" -j DROP
  done
  iptables -w -C DOCKER-USER -j "$chain" 2>/dev/null || iptables -w -I DOCKER-USER -j "$chain"
  say "egress guard: forwarded traffic to private ranges via $uplink is dropped (chain $chain in DOCKER-USER)"
}

start() {
  need_root
  install_packages
  mkdir -p "$STATE"
  if pid=$(running_pid); then
    say "dockerd already running (pid $pid; log $LOG)"
  else
    if docker_answers; then
      say "a Docker engine not started by this script already answers; leaving it alone"
      return 0
    fi
    local args=(--log-level=info)
    if lacks_cap_sys_resource; then
      install_wrapper
      args+=(--add-runtime "$RUNTIME=$WRAPPER" --default-runtime="$RUNTIME")
      say "CAP_SYS_RESOURCE is missing from the bounding set: default runtime $RUNTIME -> $WRAPPER"
    fi
    say "starting dockerd (state $STATE, log $LOG)"
    # setsid: dockerd must outlive this script and the shell that ran it
    setsid dockerd "${args[@]}" >>"$LOG" 2>&1 < /dev/null &
    echo $! > "$PIDFILE"
  fi
  local i
  for i in $(seq 1 60); do
    docker_answers && break
    running_pid >/dev/null || { tail -20 "$LOG" >&2; die "dockerd exited; log: $LOG"; }
    sleep 1
  done
  docker_answers || { tail -20 "$LOG" >&2; die "docker info does not answer after 60s; log: $LOG"; }
  egress_guard
  say "docker answers: server $(docker version -f '{{.Server.Version}}' 2>/dev/null), default runtime $(docker info -f '{{.DefaultRuntime}}' 2>/dev/null)"
  say "pid file $PIDFILE; log $LOG"
}

stop() {
  need_root
  local pid cpid=""
  [ -f "$CONTAINERD_PIDFILE" ] && cpid=$(cat "$CONTAINERD_PIDFILE" 2>/dev/null || true)
  if ! pid=$(running_pid); then
    say "dockerd (from $PIDFILE) is not running"
  else
    say "stopping dockerd pid $pid"
    kill -TERM "$pid"
    for _ in $(seq 1 30); do [ -d "/proc/$pid" ] || break; sleep 1; done
    if [ -d "/proc/$pid" ]; then say "dockerd still up after 30s: SIGKILL"; kill -KILL "$pid" || true; fi
  fi
  # dockerd stops the containerd it supervises; make sure, by its own pid file
  if [ -n "$cpid" ] && [ -d "/proc/$cpid" ] && grep -q containerd "/proc/$cpid/comm" 2>/dev/null; then
    say "stopping containerd pid $cpid"
    kill -TERM "$cpid" || true
    for _ in $(seq 1 15); do [ -d "/proc/$cpid" ] || break; sleep 1; done
    [ -d "/proc/$cpid" ] && kill -KILL "$cpid" || true
  fi
  rm -f "$PIDFILE"
  if iptables -w -C DOCKER-USER -j TAU-DEMO-EGRESS 2>/dev/null; then
    iptables -w -D DOCKER-USER -j TAU-DEMO-EGRESS; iptables -w -F TAU-DEMO-EGRESS; iptables -w -X TAU-DEMO-EGRESS
  fi
  say "stopped"
}

status() {
  local pid
  if pid=$(running_pid); then
    say "dockerd running, pid $pid; state $STATE; log $LOG"
    docker_answers && say "docker info answers" || say "docker info does NOT answer"
    return 0
  fi
  if docker_answers; then say "dockerd not started by this script, but docker info answers"; return 0; fi
  say "not running (state $STATE)"
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
