#!/bin/sh
# What `make compose-test` needs besides the test dependencies: podman as the container engine (runc: crun
# refuses a hybrid cgroup v1/v2 layout; the CNI plugins and dnsname for the compose network's names),
# docker-compose (on podman's Docker-compatible socket) and mmdebstrap (the base images are made locally from
# Debian's packages: no container registry is needed).
set -e
if command -v podman >/dev/null && command -v runc >/dev/null && command -v docker-compose >/dev/null \
        && command -v mmdebstrap >/dev/null && [ -x /usr/lib/cni/dnsname ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing podman, runc, docker-compose and mmdebstrap from apt..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        podman runc containernetworking-plugins golang-github-containernetworking-plugin-dnsname iptables \
        docker-compose mmdebstrap >/dev/null
    exit 0
fi
echo "Missing: run as root, or 'sudo apt-get install podman runc containernetworking-plugins" \
     "golang-github-containernetworking-plugin-dnsname iptables docker-compose mmdebstrap', then rerun." >&2
exit 1
