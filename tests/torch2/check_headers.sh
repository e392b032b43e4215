#!/bin/bash
# Compiles every file of csrc/aten against the headers of later PyTorch releases, from Debian's
# libtorch-dev packages (trixie's 2.6 and sid's 2.14 by default), without installing them: the
# packages are downloaded through a private apt configuration and unpacked into a scratch
# folder. Syntax only: nothing is linked, and a schema whose C++ signature changed is caught by
# tests/torch2/schema_diff.py, not here. C++20, as CMakeLists.txt builds for any torch 2.x.
#
#   bash tests/torch2/check_headers.sh [SCRATCH_DIR [VERSION ...]]
#
# VERSION is a Debian version of libtorch-dev (2.6.0+dfsg-7, 2.14.1+dfsg-1). Exits non-zero
# when any file fails to compile against any of them; the errors go to SCRATCH_DIR/<version>.log.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=${1:-/tmp/loom-torch-headers}
shift || true
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(2.6.0+dfsg-7 2.14.1+dfsg-1)
mkdir -p "$scratch"/apt/{lists/partial,cache/archives/partial} "$scratch/deb"
scratch=$(cd "$scratch" && pwd)

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat >"$scratch/apt/sources.list" <<EOF
deb [signed-by=$keyring] http://deb.debian.org/debian trixie main
deb [signed-by=$keyring] http://deb.debian.org/debian sid main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$scratch/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$scratch/apt/lists" -o "Dir::Cache=$scratch/apt/cache"
  -o Dir::State::Status=/dev/null -o APT::Sandbox::User=root)

need_update=1
for v in "${versions[@]}"; do
  [ -d "$scratch/torch-$v/usr/include/ATen" ] && continue
  if [ $need_update = 1 ]; then
    apt-get "${apt_opts[@]}" -qq update || { echo "apt-get update failed"; exit 2; }
    need_update=0
  fi
  (cd "$scratch/deb" && apt-get "${apt_opts[@]}" -qq download "libtorch-dev=$v") \
    || { echo "cannot download libtorch-dev=$v"; exit 2; }
  dpkg -x "$scratch/deb/libtorch-dev_${v}_amd64.deb" "$scratch/torch-$v" || exit 2
done

py_include=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
status=0
for v in "${versions[@]}"; do
  inc=$scratch/torch-$v/usr/include
  log=$scratch/$v.log
  : >"$log"
  start=$(date +%s)
  # One compiler a file, as many at once as there are cores; a failing file appends its errors.
  ls "$root"/csrc/aten/*.cpp | xargs -P "$(nproc)" -I{} sh -c '
    c++ -std=c++20 -fsyntax-only -w -D_GLIBCXX_USE_CXX11_ABI=1 -DLOOM_HAVE_DNNL -DLOOM_HAVE_JIT \
      -I"$1/csrc" -isystem "$2" -isystem "$2/torch/csrc/api/include" -isystem "$3" "$4" \
      >"$5.$(basename "$4").err" 2>&1 \
      || { echo "== $(basename "$4")"; grep -E "error" "$5.$(basename "$4").err" | head -20; } >>"$5"
    rm -f "$5.$(basename "$4").err"' _ "$root" "$inc" "$py_include" {} "$log"
  failed=$(grep -c "^== " "$log")
  echo "torch $v: $(ls "$root"/csrc/aten/*.cpp | wc -l) files, $failed failed ($(( $(date +%s) - start )) s)"
  [ "$failed" = 0 ] || { sed -n 1,60p "$log"; status=1; }
done
exit $status
