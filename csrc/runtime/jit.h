// The in-process compiler (NOTE [In-process compiler], runtime/jit.cpp): clang turns a
// kernel's C source into an object in memory, and LLVM's ORC JIT links objects into the
// process. Built where LLVM and clang 16 are installed; available() says whether it was.
#pragma once

#include <string>

namespace loom {
namespace jit {

bool available();

// The compiler's version and its arguments, optimizing or quick (NOTE [Compile tiers],
// runtime/compiler.cpp): part of every cache key of objects it makes.
const std::string& identity(bool quick = false);

// The text that kernels' sources begin with, precompiled into `dir` when first used
// (NOTE [Precompiled prelude], runtime/jit.cpp).
void set_prelude(const std::string& text, const std::string& dir);

// Compiles `source` (called `path` in diagnostics) into an ELF object, at -O0 when
// `quick`. On failure returns false with clang's diagnostics in `log`.
bool compile(const std::string& source, const std::string& path, bool quick, std::string* object,
             std::string* log);

// An object linked into the process, unlinked when destroyed.
class Module;

// Links `object` (made by compile) into the process and finds its `kernel` function.
// Returns nullptr with the reason in `error` when it cannot.
Module* load(const std::string& object, const std::string& name, void** kernel, std::string* error);
void unload(Module* m);

}  // namespace jit
}  // namespace loom
