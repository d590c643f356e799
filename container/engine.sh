#!/usr/bin/env bash
# Prints the container engine to use and the options it needs on this host, for the Makefile's image
# targets: `engine.sh engine`, `engine.sh run-options`, `engine.sh build-options`. Each choice can be
# overridden by the variable named beside it, and is said on stderr.
set -euo pipefail
what=${1:-engine}

engine=${ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then engine=podman
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then engine=docker
  else echo "no container engine: install podman (apt install podman runc) or docker" >&2; exit 2
  fi
fi

options=""   # both verbs take these
run_only=""  # `podman build` refuses these ("unknown flag"): they go to `run` alone
if [ "$engine" = podman ]; then
  # crun refuses a host whose cgroups are v1 or hybrid (this course's CI); runc runs there.
  runtime=${CONTAINER_RUNTIME:-}
  if [ -z "$runtime" ] && [ "$(podman info --format '{{.Host.CgroupsVersion}}' 2>/dev/null)" = v1 ] && command -v runc >/dev/null 2>&1; then
    runtime=runc
  fi
  [ -n "$runtime" ] && options="$options --runtime $runtime"
  # Without CAP_SYS_RESOURCE the engine cannot set limits above the host's: ask for the host's own.
  # (nproc above about pid_max failed too, on the course's machine, so it stays below that.)
  nofile=${NOFILE:-$(ulimit -Hn)}
  pid_max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
  nproc=${NPROC:-$(ulimit -Hu)}
  [ "$nproc" = unlimited ] && nproc=$((pid_max - 1024))
  [ "$nproc" -gt $((pid_max - 1024)) ] && nproc=$((pid_max - 1024))
  [ "$nofile" = unlimited ] && nofile=65536
  options="$options --ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"
  # podman caps a container at 2,048 tasks (pids.max); chapter 5's and 10's threads need many more.
  run_only="$run_only --pids-limit ${PIDS_LIMIT:--1}"
fi

case "$what" in
  engine) echo "$engine" ;;
  run-options) options="$options$run_only"; echo "$options" ;;
  # The build fetches packages: the host's network, and its CA bundle as a secret where it has one
  # (a TLS-inspecting proxy's root is in it; the secret is not stored in the image).
  build-options)
    bundle=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
    secret=""; [ -s "$bundle" ] && secret=" --secret id=cabundle,src=$bundle"
    # docker's legacy builder (docker without its buildx plugin) has no --secret and no RUN --mount.
    if [ "$engine" = docker ] && ! docker buildx version >/dev/null 2>&1; then
      echo "docker builds this Containerfile only with BuildKit: install docker's buildx plugin (docker-buildx-plugin)" >&2; exit 2
    fi
    options="$options --network host$secret"; echo "$options" ;;
  *) echo "usage: engine.sh engine|run-options|build-options" >&2; exit 2 ;;
esac
echo "container: $engine$options" >&2
