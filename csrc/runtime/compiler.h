// Turning C source into callable kernels: the system compiler, dlopen, and a cache in
// memory and on disk keyed by the source text, compiler and flags.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

// Every generated kernel has this signature: buffer pointers, and the range of the
// outermost loop that this call covers.
using KernelFn = void (*)(char** bufs, int64_t start, int64_t end);

struct CompiledKernel {
  KernelFn fn = nullptr;
  std::string name;         // k_<hash>
  std::string source_path;  // where the source lies on disk
};

// Compiled or cached kernel for `source`, which defines `void kernel(char**, int64_t,
// int64_t)`. Throws std::runtime_error naming the source file when compilation fails.
const CompiledKernel& compile_kernel(const std::string& source);

// The compiler command and flags in use (LOOM_CC overrides the compiler; LOOM_CFLAGS is
// appended to the flags).
std::string compiler_command();
std::string cache_dir();

}  // namespace loom
