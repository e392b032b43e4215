#!/bin/bash
# Builds and tests Loom on torch 2.x without the GPU machine: a Debian trixie root made with
# debootstrap holds trixie's python3-torch (2.6, Python 3.13, gcc 14, oneDNN 3), and run.sh
# runs inside it with chroot on a copy of the working tree. Needs root (debootstrap, mount,
# chroot) and Debian's archive; the root takes about 2.3 GB and is kept for the next run,
# as is its build folder (build-torch2), so a second run builds incrementally.
#
#   bash tests/torch2/trixie.sh [ROOT_DIR [SUITE_SECONDS]]
#
# The logs of run.sh land in build/torch2-trixie/. SUITE_SECONDS (default 1800) bounds the
# Python suite, one pytest process per file on every core; 0 skips it. Each file runs to its
# end (SUITE_MAXFAIL, default here 1000 failures).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:-/var/tmp/loom-trixie}
suite_seconds=${2:-1800}
out=$repo/build/torch2-trixie
packages="python3-torch libtorch-dev pybind11-dev python3-pytest python3-numpy python3-hypothesis
  python3-dev python3-setuptools cmake ninja-build g++ gcc libdnnl-dev libopenblas0-openmp
  ccache git"

[ "$(id -u)" = 0 ] || { echo "trixie.sh needs root (debootstrap, mount, chroot)"; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "debootstrap trixie into $root"
  debootstrap --variant=minbase trixie "$root" http://deb.debian.org/debian >"$root.log" 2>&1 \
    || { tail -20 "$root.log"; exit 1; }
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" || true; done
}
trap cleanup EXIT
for m in proc sys dev; do
  if ! mountpoint -q "$root/$m"; then
    mount --bind "/$m" "$root/$m"
    mounted+=("$root/$m")
  fi
done
cp /etc/resolv.conf "$root/etc/resolv.conf"

# shellcheck disable=SC2086  # the package list splits on purpose
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
  "dpkg -s $(echo $packages) >/dev/null 2>&1 || { apt-get update -qq && \
   apt-get install -y -qq --no-install-recommends $(echo $packages) >/dev/null; }" \
  || { echo "cannot install the packages in $root"; exit 1; }

# The working tree as git sees it (tracked and untracked files that are not ignored) in
# place of the previous copy; build-torch2 and the extension it links into python/loom stay.
mkdir -p "$root/root/loom"
find "$root/root/loom" -mindepth 1 -maxdepth 1 ! -name build-torch2 ! -name python -exec rm -rf {} +
find "$root/root/loom/python" -type f ! -name "_loom*.so" -delete 2>/dev/null || true
(cd "$repo" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) \
  | tar -C "$root/root/loom" -xf -
rm -rf "$root/root/out" "$out"
status=0
chroot "$root" /usr/bin/env SUITE_MAXFAIL="${SUITE_MAXFAIL:-1000}" /bin/bash -c \
  "cd /root/loom && bash tests/torch2/run.sh /root/out $suite_seconds" \
  || status=$?
mkdir -p "$out"
cp -r "$root/root/out/." "$out/"
echo "logs in $out"
exit $status
