#!/bin/sh
# Fetches PyTorch's own test files for the installed python3-torch with `apt-get source`
# and prints the folder that holds them. Everything lives in a cache outside the repo
# (their code is never committed); once cached, this runs offline and does nothing.
#
#   LOOM_UPSTREAM_CACHE  cache folder (default ~/.cache/loom-upstream)
#   LOOM_UPSTREAM_MIRROR Debian archive to fetch from (default: the one apt already uses)
set -eu

FILES="test_view_ops.py test_indexing.py test_type_promotion.py test_shape_ops.py
test_sort_and_select.py test_reductions.py test_tensor_creation_ops.py test_binary_ufuncs.py
test_scatter_gather_ops.py test_segment_reductions.py test_complex.py test_foreach.py
test_torch.py"
cache=${LOOM_UPSTREAM_CACHE:-$HOME/.cache/loom-upstream}
version=$(dpkg-query -W -f='${source:Version}' python3-torch)   # e.g. 1.13.1+dfsg-4
upstream=${version%%+*}; upstream=${upstream%-*}               # e.g. 1.13.1
dest=$cache/pytorch-$version/test

complete=1
[ -f "$dest/.complete" ] || complete=0
for f in $FILES; do [ -f "$dest/$f" ] || complete=0; done
if [ "$complete" = 1 ]; then
  echo "$dest"
  exit 0
fi

# A private apt configuration, so that the machine's own sources and lists stay as they are.
apt_dir=$cache/apt
mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$cache/src"
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
mirror=${LOOM_UPSTREAM_MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(CODENAME)' \
  'Origin: Debian' 'Component: main' 2>/dev/null | awk -v c="$codename" '$2 == c {print $1; exit}')}
if [ -z "$mirror" ]; then
  echo "fetch.sh: no Debian '$codename' archive in apt's sources; set LOOM_UPSTREAM_MIRROR" >&2
  exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
signed=""
[ -f "$keyring" ] && signed="[signed-by=$keyring] "
echo "deb-src ${signed}$mirror $codename main" > "$apt_dir/sources.list"

apt() {
  cmd=$1; shift
  "$cmd" -q -o Dir::Etc::SourceList="$apt_dir/sources.list" \
    -o Dir::Etc::SourceParts="$apt_dir/parts" -o Dir::State::Lists="$apt_dir/lists" \
    -o Dir::Cache="$apt_dir/cache" -o APT::Sandbox::User="$(id -un)" "$@"
}

tarball=$cache/src/pytorch_${version%-*}.orig.tar.xz
if [ ! -f "$tarball" ]; then
  apt apt-get update >&2
  # Only the upstream tarball: the tests are upstream's, and Debian's packaging is not needed.
  # apt checks it against the signed Sources index before keeping it.
  (cd "$cache/src" && apt apt-get source --tar-only "pytorch=$version" >&2)
fi

tmp=$cache/pytorch-$version/test.tmp
rm -rf "$tmp" && mkdir -p "$tmp"
members=""
for f in $FILES; do members="$members pytorch-$upstream/test/$f"; done
# shellcheck disable=SC2086
tar --no-same-owner -xJf "$tarball" -C "$tmp" --strip-components=2 $members
touch "$tmp/.complete"
rm -rf "$dest" && mv "$tmp" "$dest"
echo "$dest"
