// Ops without a Loom kernel run on the CPU: inputs are copied out (realizing them), the
// CPU kernel runs, and results and mutated arguments are copied back in. Every fallback is
// counted per op; LOOM_FALLBACK = allow | warn (default, once per op) | error.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "aten/tensor_util.h"
#include "core/metrics.h"

namespace loom::aten {
namespace {

enum class FallbackMode { Allow, Warn, Error };

// Read on every fallback so that a test can change it at run time.
FallbackMode fallback_mode() {
  const char* env = std::getenv("LOOM_FALLBACK");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "warn") == 0) return FallbackMode::Warn;
  if (std::strcmp(env, "allow") == 0) return FallbackMode::Allow;
  if (std::strcmp(env, "error") == 0) return FallbackMode::Error;
  TORCH_CHECK(false, "LOOM_FALLBACK must be allow, warn or error, got '", env, "'");
}

bool first_warning_for(const std::string& op_name) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> g(mu);
  return warned.insert(op_name).second;
}

// torch's CPU fallback copies mutated Tensor arguments back, but not mutated lists of
// tensors (the _foreach_*_ ops): their writes would be lost silently.
bool mutates_tensor_list(const c10::FunctionSchema& schema) {
  for (const c10::Argument& a : schema.arguments()) {
    if (!a.alias_info() || !a.alias_info()->isWrite()) continue;
    if (a.type()->kind() == c10::TypeKind::ListType) return true;
  }
  return false;
}

void loom_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  std::string op_name = c10::toString(op.operator_name());
  TORCH_CHECK_NOT_IMPLEMENTED(!mutates_tensor_list(op.schema()), "Loom has no kernel for ",
                              op_name, ", and the CPU fallback cannot write a list of tensors back");
  {
    Metrics& m = metrics();
    std::lock_guard<std::mutex> g(m.mu);
    m.fallbacks[op_name] += 1;
  }
  switch (fallback_mode()) {
    case FallbackMode::Allow:
      break;
    case FallbackMode::Warn:
      if (first_warning_for(op_name)) {
        TORCH_WARN("Loom has no kernel for ", op_name,
                   "; it runs on the CPU (set LOOM_FALLBACK=allow to silence, =error to fail)");
      }
      break;
    case FallbackMode::Error:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "Loom has no kernel for ", op_name,
                                  " and LOOM_FALLBACK=error");
  }
  at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&loom_cpu_fallback>());
}

}  // namespace loom::aten
