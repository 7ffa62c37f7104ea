#!/usr/bin/env bash
# Installs what rematkit builds with, from Debian 12's packages; does nothing when all are present.
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config libgtest-dev nlohmann-json3-dev libcli11-dev nettle-dev libhwy-dev libtbb-dev libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev libopenblas-dev libxsmm-dev libyaml-cpp-dev coinor-libcbc-dev openmpi-bin libopenmpi-dev clang-14 libclang-rt-14-dev python3-dev pybind11-dev python3-numpy python3-pytest)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "rematkit: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "rematkit: installing packages needs root (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
