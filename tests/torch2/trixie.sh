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
# place of the previous copy, file by file: a file that differs is copied with a new
# modification time (tar would keep the old one, older than build-torch2's objects, and the
# build would miss the change), files gone from the tree go; build-torch2 and the extension
# it links into python/loom stay.
dst=$root/root/loom
mkdir -p "$dst"
(cd "$repo" && git ls-files -co --exclude-standard) | sort >"$root/files.txt"
(cd "$dst" && find . -path ./build-torch2 -prune -o -type f ! -name "_loom*.so" -print \
  | sed 's|^\./||' | sort) | comm -13 "$root/files.txt" - | while IFS= read -r f; do
  rm -f "$dst/$f"
done
while IFS= read -r f; do
  if ! cmp -s "$repo/$f" "$dst/$f"; then
    mkdir -p "$dst/$(dirname "$f")"
    cp "$repo/$f" "$dst/$f"
  fi
done <"$root/files.txt"
rm -rf "$root/root/out" "$out"
status=0
chroot "$root" /usr/bin/env SUITE_MAXFAIL="${SUITE_MAXFAIL:-1000}" /bin/bash -c \
  "cd /root/loom && bash tests/torch2/run.sh /root/out $suite_seconds" \
  || status=$?
mkdir -p "$out"
cp -r "$root/root/out/." "$out/"
echo "logs in $out"
exit $status
