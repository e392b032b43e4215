// Turning C source into callable kernels: the system compiler, dlopen, and a cache in
// memory and on disk keyed by the source text, compiler and flags.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace loom {

// Every generated kernel has this signature: buffer pointers, and the range of the
// outermost loop that this call covers.
using KernelFn = void (*)(char** bufs, int64_t start, int64_t end);

namespace jit {
class Module;
}

// A loaded kernel: a library, or an object linked by the in-process compiler (NOTE
// [In-process compiler]); unloaded when the last holder lets go (the compile cache holds
// the recently used ones, a kernel plan the one it runs).
struct CompiledKernel {
  KernelFn fn = nullptr;
  std::string name;         // k_<hash>
  std::string source_path;  // where the source lies on disk
  void* lib = nullptr;
  jit::Module* module = nullptr;
  // NOTE [Compile tiers] (runtime/compiler.cpp): a kernel compiled at -O0 keeps its source
  // and counts its runs until it is compiled again optimized.
  bool quick = false;
  std::string source;
  mutable std::atomic<int> runs{0};
  CompiledKernel() = default;
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;
  ~CompiledKernel();
};

// Compiled or cached kernel for `source`, which defines `void kernel(char**, int64_t,
// int64_t)`: compiled at -O0 where `quick` (NOTE [Compile tiers]). Throws
// std::runtime_error naming the source file when compilation fails.
std::shared_ptr<const CompiledKernel> compile_kernel(const std::string& source, bool quick = false);

// The optimized kernel of a quick one (compiled now, or cached); `k` itself otherwise.
std::shared_ptr<const CompiledKernel> optimized_kernel(const std::shared_ptr<const CompiledKernel>& k);

// Work (loop points times nodes) below which a kernel is compiled quickly first
// (LOOM_QUICK_WORK, default 65536), and the run of a quick kernel at which it is compiled
// again optimized (LOOM_QUICK_RUNS, default 3; 0: never).
int64_t quick_work_limit();
int quick_runs();

// How many kernels the cache keeps loaded (LOOM_MAX_LOADED_KERNELS, default 1024).
size_t max_loaded_kernels();

// The compiler in use: clang in the process where loom was built with it, unless LOOM_CC
// names a compiler to run; that command with its flags otherwise (LOOM_CFLAGS is appended
// to the flags of either).
std::string compiler_command(bool quick = false);
std::string cache_dir();

}  // namespace loom
