// Which ops a kernel uses, for the preludes its source needs and the paths it leaves to a
// strict rerun (NOTE [Deferred checks], render_c.cpp).
#include "codegen/renderer.h"

namespace loom {

namespace c_render {

bool Renderer::uses_gamma(const LKernel& k) {
  for (const LNode& n : k.nodes)
    if (n.op == Op::Lgamma || n.op == Op::Digamma || n.op == Op::Trigamma || n.op == Op::Zeta)
      return true;
  return k.prologue && uses_gamma(*k.prologue);
}

}  // namespace c_render

bool has_strict_path(Op op, DType dtype) {
  return is_floating(dtype) && (op == Op::Sin || op == Op::Cos || op == Op::Tan || op == Op::Fmod ||
                                op == Op::Remainder || op == Op::FloorDiv);
}

namespace c_render {

bool Renderer::uses_double_trig(const LKernel& k) {
  for (const LNode& n : k.nodes)
    if (n.dtype == DType::Float64 && (n.op == Op::Sin || n.op == Op::Cos || n.op == Op::Tan))
      return true;
  return k.prologue && uses_double_trig(*k.prologue);
}

bool Renderer::uses_strict_paths(const LKernel& k) {
  for (const LNode& n : k.nodes)
    if (has_strict_path(n.op, n.dtype)) return true;
  return false;
}

bool Renderer::uses_double_math(const LKernel& k) {
  for (const LNode& n : k.nodes) {
    if (n.op == Op::Erfc && n.dtype != DType::Float64) return true;  // loom_erfcf
    if (n.op == Op::Pow && is_floating(n.dtype) && n.dtype != DType::Float64) return true;
    if (n.dtype == DType::Float64 &&
        (n.op == Op::Exp || n.op == Op::Expm1 || n.op == Op::Tanh || n.op == Op::Sinh ||
         n.op == Op::Cosh || n.op == Op::Sigmoid || n.op == Op::Log || n.op == Op::Log1p ||
         n.op == Op::Fmod || n.op == Op::Remainder || n.op == Op::FloorDiv ||
         n.op == Op::Atan || n.op == Op::Atan2 || n.op == Op::Asin || n.op == Op::Acos))
      return true;
  }
  return k.prologue && uses_double_math(*k.prologue);
}

bool Renderer::uses_any(const LKernel& k, std::initializer_list<Op> ops) {
  for (Op op : ops)
    if (uses_op(k, op)) return true;
  return false;
}

bool Renderer::uses_op(const LKernel& k, Op op) {
  for (const LNode& n : k.nodes)
    if (n.op == op) return true;
  return k.prologue && uses_op(*k.prologue, op);
}

bool Renderer::uses_special(const LKernel& k) {
  for (const LNode& n : k.nodes) {
    switch (n.op) {
      case Op::Erfinv:
      case Op::Ndtri:
      case Op::Erfcx:
      case Op::I0:
      case Op::I0e:
      case Op::I1:
      case Op::I1e:
      case Op::FrexpMantissa:
      case Op::FrexpExponent:
      case Op::Gcd:
      case Op::NextAfter:
        return true;
      default:
        break;
    }
  }
  return k.prologue && uses_special(*k.prologue);
}

}  // namespace c_render

}  // namespace loom
