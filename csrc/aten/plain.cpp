// Elementwise ops over plain operands: their result dtypes and sizes without a meta call.
#include "aten/plain.h"

#include <c10/util/accumulate.h>

#include "aten/torch_compat.h"

namespace loom::aten {

using at::Tensor;

// NOTE [Plain binary ops]: the meta call that checks a binary op and lays out its result
// (a TensorIterator built over meta stand-ins) was a fifth of a tiny op's host time, and a
// unary op made two (iterator_layout). Over plain operands, contiguous Loom tensors or
// Python numbers, the CPU's result is contiguous at their broadcast shape (checked on the
// CPU over 150,000 random broadcasts, odd strides of size-1 dims included; an empty result
// is not always: logical ops and where give it other strides), of the promoted dtype. For the
// ops whose meta functions check nothing beyond that (add and sub also check alpha and
// bools, in ops_elementwise.cpp), the result is made without them. Anything else (other strides, shapes that do
// not broadcast, a CPU tensor that is not a Python number, named tensors) takes the meta
// call, which raises the CPU's errors. The kernels' own dtype checks (unary_value,
// binary_value) run on both paths.
//
// A size-1 dim's stride counts too, though is_contiguous() ignores it: the CPU orders
// the dims of a result that broadcasts (a Python number is a 0-dim operand) by its
// operands' strides, size-1 dims included, so `t.as_strided([2, 1], [1, 2]) > 0` has
// strides (1, 2) there (found by the view fuzzer). Only the strides a fresh contiguous
// tensor has are plain.
bool plain(const Tensor& t) {
  if (!is_loom(t) || !t.is_contiguous() || has_names(t)) return false;
  const at::IntArrayRef sizes = t.sizes(), strides = t.strides();
  int64_t expect = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] == 1 && strides[d] != expect) return false;
    expect *= sizes[d];
  }
  return true;
}

bool number(const Tensor& t) { return t.unsafeGetTensorImpl()->is_wrapped_number() && t.is_cpu(); }

// The result sizes of an elementwise op over plain operands (undefined ones skipped), or
// nullopt. `cpu_scalars`: CPU 0-dim tensors that are not Python numbers count as numbers
// (where takes them so; binary ops leave them to the meta call).
c10::optional<at::DimVector> plain_sizes(std::initializer_list<const Tensor*> ts,
                                         bool cpu_scalars) {
  at::DimVector out;
  bool any = false;
  for (const Tensor* t : ts) {
    if (!t->defined() || number(*t) || (cpu_scalars && t->is_cpu() && t->dim() == 0)) continue;
    if (!plain(*t)) return c10::nullopt;
    const at::IntArrayRef s = t->sizes();
    if (!any) {
      out.assign(s.begin(), s.end());
      any = true;
      continue;
    }
    if (s == at::IntArrayRef(out)) continue;
    // Broadcast, aligned at the trailing dims.
    at::DimVector b(std::max(out.size(), s.size()), 1);
    for (size_t i = 0; i < b.size(); ++i) {
      const int64_t x = i < out.size() ? out[out.size() - 1 - i] : 1;
      const int64_t y = i < s.size() ? s[s.size() - 1 - i] : 1;
      if (x != y && x != 1 && y != 1) return c10::nullopt;
      b[b.size() - 1 - i] = x == 1 ? y : x;
    }
    out = std::move(b);
  }
  if (!any || c10::multiply_integers(out) == 0) return c10::nullopt;
  return out;
}

// The result dtype of `op` over plain operands that promote to `common`; nullopt for the
// ops whose meta functions check more.
c10::optional<c10::ScalarType> plain_dtype(Op op, c10::ScalarType common) {
  switch (op) {
    // Unary ops whose meta function is only a float TensorIterator (integers compute in
    // the default dtype).
    case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log: case Op::Log2: case Op::Log10:
    case Op::Log1p: case Op::Sqrt: case Op::Rsqrt: case Op::Sin: case Op::Cos: case Op::Tan:
    case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh: case Op::Tanh:
    case Op::Sigmoid: case Op::Erf: case Op::Reciprocal:
    case Op::Div:  // true division: a float TensorIterator too
      return at::isIntegralType(common, /*includeBool=*/true)
                 ? c10::typeMetaToScalarType(at::get_default_dtype())
                 : common;
    case Op::Add: case Op::Sub: case Op::Mul:
      return common;
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
    case Op::LogicalAnd: case Op::LogicalOr: case Op::LogicalXor:
      return at::kBool;
    case Op::BitAnd: case Op::BitOr: case Op::BitXor:  // a float raises in binary_value
      return common;
    // Same-dtype ops whose meta functions refuse only bools or complex values.
    case Op::Neg: case Op::Abs: case Op::Relu: case Op::Floor: case Op::Ceil: case Op::Trunc:
    case Op::Round: case Op::Sign: case Op::Maximum: case Op::Minimum:
      if (common == at::kBool || at::isComplexType(common)) return c10::nullopt;
      return common;
    default:
      return c10::nullopt;
  }
}

void check_inplace_cast(c10::ScalarType r, const Tensor& self) {
  TORCH_CHECK(c10::canCast(r, self.scalar_type()), "result type ", r,
              " can't be cast to the desired output type ", self.scalar_type());
}

// An in-place op over plain operands whose broadcast shape is self's own.
bool plain_into_self(const Tensor& self, const Tensor& other) {
  if (!plain(self)) return false;
  auto sizes = plain_sizes({&self, &other});
  return sizes && at::IntArrayRef(*sizes) == self.sizes();
}

}  // namespace loom::aten
