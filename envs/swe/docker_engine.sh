#!/usr/bin/env bash
# Make a Docker engine answer for the code-repair sandbox, the way docs/envs.md describes:
#   - if `docker info` answers (DOCKER_HOST or the default socket), use it;
#   - else install Debian's docker.io if needed and start dockerd off host networking
#     (--bridge=none --iptables=false), with its own data root and socket under $TREE_RL_DOCKER_DIR.
# Prints the DOCKER_HOST to use:  eval "$(bash envs/swe/docker_engine.sh)"
set -euo pipefail
dir="${TREE_RL_DOCKER_DIR:-/tmp/tree-rl-docker}"
socket="unix://$dir/docker.sock"

if docker info >/dev/null 2>&1; then
  echo "export DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock}"
  exit 0
fi
if DOCKER_HOST="$socket" docker info >/dev/null 2>&1; then
  echo "export DOCKER_HOST=$socket"
  exit 0
fi
if ! command -v dockerd >/dev/null; then
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "docker_engine.sh: no Docker engine answers and dockerd is not installed; install Docker" \
         "(Debian: apt-get install -y docker.io) or point DOCKER_HOST at an engine" >&2
    exit 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
mkdir -p "$dir"
# its own session: a signal to the caller's process group (Ctrl-C, `kill -- -PGID`) leaves the engine up
nohup setsid dockerd --bridge=none --iptables=false --ip6tables=false --data-root "$dir/data" --exec-root "$dir/exec" \
  --pidfile "$dir/docker.pid" --host "$socket" >"$dir/dockerd.log" 2>&1 &
for _ in $(seq 60); do
  if DOCKER_HOST="$socket" docker info >/dev/null 2>&1; then
    echo "export DOCKER_HOST=$socket"
    exit 0
  fi
  sleep 1
done
echo "docker_engine.sh: dockerd did not answer within 60 s; see $dir/dockerd.log" >&2
exit 1
