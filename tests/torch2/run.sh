#!/bin/bash
# Builds Loom against the torch 2.x of the GPU machine (where `python3` holds torch 2.11) and
# runs its tests there: the release checks, then the whole Python suite under a time limit.
#
#   bash tests/torch2/run.sh OUT_DIR [SUITE_SECONDS]
#
# A BLAS for the matrix products (the machine has none) may travel in .device/, ignored by
# git: libopenblas.so.0 with libgfortran.so.5 and libquadmath.so.0 from Debian's
# libopenblas0-openmp. OUT_DIR gets at most 8 files (what the device tool brings back).
# SUITE_MAXFAIL (default 25) stops a test file after that many failures.
set -u
out=${1:?usage: run.sh OUT_DIR [SUITE_SECONDS]}
suite_seconds=${2:-300}
mkdir -p "$out"
py=$(command -v python3)
{
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  cc --version | head -1; cmake --version | head -1; echo "cores $(nproc)"
  "$py" -c 'import pybind11; print("pybind11", pybind11.__version__)' 2>/dev/null
} | tee "$out/env.txt"

if [ -f .device/libopenblas.so.0 ]; then
  export LD_LIBRARY_PATH=$PWD/.device${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LOOM_BLAS=$PWD/.device/libopenblas.so.0
fi
export LOOM_CACHE_DIR=/tmp/loom-cache

start=$(date +%s)
# The machine's default g++ (/opt/gcc) links libstdc++ statically: the extension then carries
# a second copy beside torch's, and the first kernel's lowering crashed in an ostream (session
# 19, tests/torch2/README.md). The system's g++ links the shared one.
flags=()
[ -x /usr/bin/g++ ] && flags+=(-DCMAKE_C_COMPILER=/usr/bin/gcc -DCMAKE_CXX_COMPILER=/usr/bin/g++)
pybind11_dir=$("$py" -m pybind11 --cmakedir 2>/dev/null) && flags+=(-Dpybind11_DIR="$pybind11_dir")
cmake -S . -B build-torch2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$py" "${flags[@]}" \
  -DLOOM_CPP_TESTS=OFF >"$out/build.log" 2>&1 \
  || { tail -40 "$out/build.log"; exit 1; }
grep -E "PyTorch|oneDNN|clang 16" "$out/build.log"
if ! cmake --build build-torch2 -j "$(nproc)" -- -k 0 >>"$out/build.log" 2>&1; then
  grep -E "error|Error" "$out/build.log" | head -60
  exit 1
fi
echo "built in $(( $(date +%s) - start )) s"
so=$(ls -t python/loom/_loom*.so | head -1)
readelf -d "$so" | grep NEEDED | sed 's/.*Shared library: //' | tr '\n' ' '; echo
readelf -d "$so" | grep -q "libstdc++" || echo "warning: $so links libstdc++ statically"
ninja -C build-torch2 -t commands "$PWD/$so" | tail -1 | tr ' ' '\n' | grep -E "^-|^/|^lib" | grep -v "\.o$" \
  | tr '\n' ' ' | cut -c1-1500; echo

export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
"$py" tests/torch2/probe.py "$out/probe.txt"
timeout 120 "$py" examples/train_cifar.py --device loom --steps 3 2>&1 | tail -4
timeout 120 "$py" -m pytest -q -p no:cacheprovider tests/python/test_torch_releases.py 2>&1 \
  | tee "$out/releases.txt" | tail -15
[ "$suite_seconds" -gt 0 ] || exit 0
# One pytest process per file, as many at once as there are cores (a crash costs one file).
mkdir -p "$out/suite"
ls tests/python/test_*.py | timeout "$suite_seconds" xargs -P "$(nproc)" -I{} sh -c \
  'timeout '"$suite_seconds"' '"$py"' -m pytest -q -p no:cacheprovider --maxfail='"${SUITE_MAXFAIL:-25}"' {} \
     > '"$out"'/suite/$(basename {} .py).txt 2>&1'
for f in "$out"/suite/*.txt; do
  printf '%-28s %s\n' "$(basename "$f" .txt)" "$(tail -1 "$f" | cut -c1-90)"
done | tee "$out/suite.txt"
tar -C "$out" -czf "$out/suite.tar.gz" suite && rm -r "$out/suite"
echo "done after $(( $(date +%s) - start )) s"
