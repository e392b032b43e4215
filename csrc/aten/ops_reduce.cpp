// Reductions: sum, mean, prod, amax/amin, max/min, argmax/argmin, all/any, var/std,
// logsumexp, vector norms (the scans are in ops_scan.cpp). Each runs on meta tensors first
// for PyTorch's result layout and errors; the value is a reduce node over the input.
#include <ATen/MetaFunctions.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "aten/op_util.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using Axes = std::vector<int>;

Shape out_shape(const Tensor& t) { return shape_of(t.sizes()); }
DType dtype_of(const Tensor& t) { return to_loom(t.scalar_type()); }

// Half types accumulate in Float32 (ComplexHalf in Complex64), as the CPU kernels do.
DType acc_dtype(DType t) {
  if (t == DType::Complex32) return DType::Complex64;
  return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
}

// The reduced dims, sorted and unique; no dims (or an empty list) means all of them.
Axes reduce_axes(int64_t ndim, at::OptionalIntArrayRef dim) {
  Axes axes;
  if (ndim == 0) return axes;
  if (!dim.has_value() || dim->empty()) {
    for (int64_t d = 0; d < ndim; ++d) axes.push_back(int(d));
    return axes;
  }
  for (int64_t d : *dim) axes.push_back(int(c10::maybe_wrap_dim(d, ndim)));
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}
Axes one_axis(int64_t ndim, int64_t dim) { return reduce_axes(ndim, at::IntArrayRef{dim}); }

int64_t reduced_numel(const Shape& shape, const Axes& axes) {
  int64_t n = 1;
  for (int ax : axes) n *= shape[ax];
  return n;
}

// A keepdim-shaped reduction result seen with the reduced dims dropped (when `out` lacks them).
NodeRef drop_axes(const NodeRef& n, const Axes& axes, const Shape& out) {
  if (n->shape == out) return n;
  IndexMap m;
  m.offs = Shape(n->shape.size(), 0);
  for (int k = 0; k < int(n->shape.size()); ++k) {
    if (std::find(axes.begin(), axes.end(), k) != axes.end()) continue;
    m.dim_of.push_back(k);
    m.mult.push_back(1);
  }
  TORCH_INTERNAL_ASSERT(m.dim_of.size() == out.size(), "loom: reduction result rank mismatch");
  return reindex(n, out, std::move(m));
}

NodeRef scalar_like(double v, const NodeRef& like) {
  return constant(Scalar::of_float(v), like->dtype, like->shape);
}

// reduce() with the 0-dim case (no axes) spelled out.
NodeRef reduce_value(ReduceKind kind, const NodeRef& v, const Axes& axes, DType out) {
  if (!axes.empty()) return reduce(kind, v, axes, out);
  switch (kind) {
    case ReduceKind::ArgMax:
    case ReduceKind::ArgMin:
      return constant(Scalar::of_int(0), DType::Int64, v->shape);
    case ReduceKind::Any:
    case ReduceKind::All:
      return binary(Op::Ne, v, constant(Scalar::of_int(0), v->dtype, v->shape));
    default:
      return cast(v, out);
  }
}

// The input read and converted to the accumulator of `result`, reduced, in keepdim shape.
NodeRef reduced(ReduceKind kind, const Tensor& self, const Axes& axes, DType result) {
  bool arg_or_bool = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin ||
                     kind == ReduceKind::Any || kind == ReduceKind::All;
  DType acc = arg_or_bool ? acc_dtype(dtype_of(self)) : acc_dtype(result);
  DType out = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin ? DType::Int64
              : kind == ReduceKind::Any || kind == ReduceKind::All     ? DType::Bool
                                                                       : acc;
  return reduce_value(kind, cast(read_tensor(self), acc), axes, out);
}

NodeRef mean_value(const Tensor& self, const Axes& axes, DType result) {
  NodeRef s = reduced(ReduceKind::Sum, self, axes, result);
  return binary(Op::Div, s, scalar_like(double(reduced_numel(out_shape(self), axes)), s));
}

// --- the functional / out= frame ---

// Stores `value(result dtype, out shape)` into a new tensor shaped like `meta`.
template <class ValueFn>
Tensor functional(const Tensor& meta, ValueFn value) {
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, value(dtype_of(meta), out_shape(out)));
  return out;
}

// The out= form: `run_meta(meta out)` checks and resizes as PyTorch does; the value is then
// computed in out's dtype.
template <class MetaFn, class ValueFn>
Tensor& into(Tensor& out, MetaFn run_meta, ValueFn value) {
  Tensor mo = to_meta(out);
  run_meta(mo);
  match_out(out, mo);
  EngineLock g(engine_mutex());
  assign(out, value(dtype_of(out), out_shape(out)));
  return out;
}

// --- sum, mean, prod ---

Tensor sum_dim(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
               c10::optional<at::ScalarType> dtype) {
  Axes axes = reduce_axes(self.dim(), dim);
  return functional(at::meta::sum(to_meta(self), dim, keepdim, dtype), [&](DType r, const Shape& s) {
    return drop_axes(reduced(ReduceKind::Sum, self, axes, r), axes, s);
  });
}
Tensor& sum_dim_out(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype, Tensor& out) {
  Axes axes = reduce_axes(self.dim(), dim);
  return into(
      out, [&](Tensor& mo) { at::meta::sum_outf(to_meta(self), dim, keepdim, dtype, mo); },
      [&](DType r, const Shape& s) {
        return drop_axes(reduced(ReduceKind::Sum, self, axes, r), axes, s);
      });
}
Tensor sum_all(const Tensor& self, c10::optional<at::ScalarType> dtype) {
  return sum_dim(self, c10::nullopt, false, dtype);
}
Tensor& sum_all_out(const Tensor& self, c10::optional<at::ScalarType> dtype, Tensor& out) {
  return sum_dim_out(self, c10::nullopt, false, dtype, out);
}

Tensor mean_dim(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                c10::optional<at::ScalarType> dtype) {
  Axes axes = reduce_axes(self.dim(), dim);
  return functional(at::meta::mean(to_meta(self), dim, keepdim, dtype), [&](DType r, const Shape& s) {
    return drop_axes(mean_value(self, axes, r), axes, s);
  });
}
Tensor& mean_dim_out(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     c10::optional<at::ScalarType> dtype, Tensor& out) {
  Axes axes = reduce_axes(self.dim(), dim);
  return into(
      out, [&](Tensor& mo) { at::meta::mean_outf(to_meta(self), dim, keepdim, dtype, mo); },
      [&](DType r, const Shape& s) { return drop_axes(mean_value(self, axes, r), axes, s); });
}
Tensor mean_all(const Tensor& self, c10::optional<at::ScalarType> dtype) {
  at::meta::mean(to_meta(self), at::OptionalIntArrayRef(), false, dtype);  // its checks (integers)
  return mean_dim(self, c10::nullopt, false, dtype);
}

Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim,
                c10::optional<at::ScalarType> dtype) {
  Tensor meta = at::meta::prod(to_meta(self), dim, keepdim, dtype);
  Axes axes = one_axis(self.dim(), dim);
  return functional(meta, [&](DType r, const Shape& s) {
    return drop_axes(reduced(ReduceKind::Prod, self, axes, r), axes, s);
  });
}
Tensor& prod_dim_out(const Tensor& self, int64_t dim, bool keepdim,
                     c10::optional<at::ScalarType> dtype, Tensor& out) {
  return into(
      out, [&](Tensor& mo) { at::meta::prod_outf(to_meta(self), dim, keepdim, dtype, mo); },
      [&](DType r, const Shape& s) {
        Axes axes = one_axis(self.dim(), dim);
        return drop_axes(reduced(ReduceKind::Prod, self, axes, r), axes, s);
      });
}
Tensor prod_all(const Tensor& self, c10::optional<at::ScalarType> dtype) {
  Axes axes = reduce_axes(self.dim(), c10::nullopt);
  // As the CPU's prod: integers and bools multiply in int64 unless a dtype is given; the
  // result is 0-dim. (PyTorch's meta prod is Python: 31 us a call.)
  const c10::ScalarType t = dtype.value_or(
      at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type());
  return functional(at::detail::empty_meta({}, t, c10::nullopt), [&](DType r, const Shape& s) {
    return drop_axes(reduced(ReduceKind::Prod, self, axes, r), axes, s);
  });
}

// --- amax/amin, max/min, argmax/argmin, all/any ---

#define LOOM_EXTREMUM(name, KIND, CPU_KERNEL)                                                     \
  Tensor name##_fn(const Tensor& self, at::IntArrayRef dim, bool keepdim) {                       \
    check_not_complex(CPU_KERNEL, self.scalar_type());                                            \
    Axes axes = reduce_axes(self.dim(), dim);                                                     \
    return functional(at::meta::name(to_meta(self), dim, keepdim), [&](DType r, const Shape& s) { \
      return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);                        \
    });                                                                                           \
  }                                                                                               \
  Tensor& name##_out(const Tensor& self, at::IntArrayRef dim, bool keepdim, Tensor& out) {        \
    check_not_complex(CPU_KERNEL, self.scalar_type());                                            \
    Axes axes = reduce_axes(self.dim(), dim);                                                     \
    return into(                                                                                  \
        out, [&](Tensor& mo) { at::meta::name##_outf(to_meta(self), dim, keepdim, mo); },         \
        [&](DType r, const Shape& s) {                                                            \
          return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);                    \
        });                                                                                       \
  }
LOOM_EXTREMUM(amax, Max, "max_values_cpu")
LOOM_EXTREMUM(amin, Min, "min_values_cpu")

Tensor extremum_all(const char* name, ReduceKind kind, const Tensor& self) {
  check_not_complex(kind == ReduceKind::Max ? "max_all" : "min_all", self.scalar_type());
  TORCH_CHECK(self.numel() > 0, name,
              "(): Expected reduction dim to be specified for input.numel() "
              "== 0. Specify the reduction dim with the 'dim' argument.");
  Axes axes = reduce_axes(self.dim(), c10::nullopt);
  return functional(to_meta(self).new_empty({}), [&](DType r, const Shape& s) {
    return drop_axes(reduced(kind, self, axes, r), axes, s);
  });
}
Tensor max_all(const Tensor& self) { return extremum_all("max", ReduceKind::Max, self); }
Tensor min_all(const Tensor& self) { return extremum_all("min", ReduceKind::Min, self); }

// torch 2.x's out= form of max() and min() (1.13 has none): which out dtypes the CPU takes,
// and its message, come from its op on a probe, once per dtype pair; then the value into
// out, resized to 0-dim.
template <ReduceKind kKind>
Tensor& extremum_all_out(const Tensor& self, Tensor& out) {
  const bool max = kKind == ReduceKind::Max;
  check_operands(max ? "max" : "min", {self, out});
  static const auto op =
      aten_op<Tensor&(const Tensor&, Tensor&)>(max ? "aten::max" : "aten::min", "unary_out");
  static const CpuVerdicts verdicts;
  verdicts.check(self.scalar_type(), out.scalar_type(), [&] {
    Tensor o = probe_out(out);
    op.call(probe_operand(self.scalar_type()), o);
  });
  at::native::resize_output(out, {});
  if (self.numel() == 0) {  // unlike max(), the CPU gives the reduction's identity
    Tensor o = probe_out(out);
    out.fill_(op.call(at::empty({0}, at::TensorOptions().dtype(self.scalar_type())), o).item());
    return out;
  }
  out.copy_(extremum_all(max ? "max" : "min", kKind, self));
  return out;
}

void extremum_dim_into(ReduceKind kind, const Tensor& self, int64_t dim, const Tensor& values,
                       const Tensor& indices) {
  TORCH_CHECK(!self.is_complex(), kind == ReduceKind::Max ? "max" : "min",
              "(): does not support complex input");
  Axes axes = one_axis(self.dim(), dim);
  EngineLock g(engine_mutex());
  ReduceKind arg = kind == ReduceKind::Max ? ReduceKind::ArgMax : ReduceKind::ArgMin;
  NodeRef v = reduced(kind, self, axes, dtype_of(values)), i = reduced(arg, self, axes, DType::Int64);
  if (v->op == Op::Reduce && i->op == Op::Reduce) make_cohort({v, i});  // NOTE [Cohorts]
  assign(values, drop_axes(v, axes, out_shape(values)));
  assign(indices, drop_axes(i, axes, out_shape(indices)));
}

#define LOOM_EXTREMUM_DIM(name, KIND)                                                         \
  std::tuple<Tensor, Tensor> name##_dim(const Tensor& self, int64_t dim, bool keepdim) {      \
    auto meta = at::meta::name(to_meta(self), dim, keepdim);                                  \
    Tensor values = result_like(std::get<0>(meta)), indices = result_like(std::get<1>(meta)); \
    extremum_dim_into(ReduceKind::KIND, self, dim, values, indices);                          \
    return {values, indices};                                                                 \
  }                                                                                           \
  std::tuple<Tensor&, Tensor&> name##_dim_out(const Tensor& self, int64_t dim, bool keepdim,  \
                                              Tensor& values, Tensor& indices) {              \
    Tensor mv = to_meta(values), mi = to_meta(indices);                                       \
    at::meta::name##_outf(to_meta(self), dim, keepdim, mv, mi);                               \
    match_out(values, mv);                                                                    \
    match_out(indices, mi);                                                                   \
    extremum_dim_into(ReduceKind::KIND, self, dim, values, indices);                          \
    return {values, indices};                                                                 \
  }
LOOM_EXTREMUM_DIM(max, Max)
LOOM_EXTREMUM_DIM(min, Min)

// argmax/argmin over all dims is the index into the row-major flattening, which is what the
// reduce's flattened index over all axes in order is.
#define LOOM_ARG(name, KIND)                                                                      \
  void name##_check(const Tensor& self) {                                                         \
    TORCH_CHECK(self.scalar_type() != at::kBool, "\"" #name "\" not implemented for 'Bool'");     \
    check_not_complex(#name "_cpu", self.scalar_type());                                          \
  }                                                                                               \
  Tensor name##_fn(const Tensor& self, c10::optional<int64_t> dim, bool keepdim) {                \
    Tensor meta = at::meta::name(to_meta(self), dim, keepdim);                                    \
    name##_check(self);                                                                           \
    Axes axes = dim ? one_axis(self.dim(), *dim) : reduce_axes(self.dim(), c10::nullopt);         \
    return functional(meta, [&](DType r, const Shape& s) {                                        \
      return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);                        \
    });                                                                                           \
  }                                                                                               \
  Tensor& name##_out(const Tensor& self, c10::optional<int64_t> dim, bool keepdim, Tensor& out) { \
    return into(                                                                                  \
        out, [&](Tensor& mo) { at::meta::name##_outf(to_meta(self), dim, keepdim, mo); },         \
        [&](DType r, const Shape& s) {                                                            \
          name##_check(self);                                                                     \
          Axes axes = dim ? one_axis(self.dim(), *dim) : reduce_axes(self.dim(), c10::nullopt);   \
          return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);                    \
        });                                                                                       \
  }
LOOM_ARG(argmax, ArgMax)
LOOM_ARG(argmin, ArgMin)

#define LOOM_BOOL_REDUCE(name, KIND)                                                      \
  Tensor name##_dim(const Tensor& self, int64_t dim, bool keepdim) {                      \
    Tensor meta = at::meta::name(to_meta(self), dim, keepdim);                            \
    Axes axes = one_axis(self.dim(), dim);                                                \
    return functional(meta, [&](DType r, const Shape& s) {                                \
      return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);                \
    });                                                                                   \
  }                                                                                       \
  Tensor& name##_dim_out(const Tensor& self, int64_t dim, bool keepdim, Tensor& out) {    \
    return into(                                                                          \
        out, [&](Tensor& mo) { at::meta::name##_outf(to_meta(self), dim, keepdim, mo); }, \
        [&](DType r, const Shape& s) {                                                    \
          Axes axes = one_axis(self.dim(), dim);                                          \
          return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);            \
        });                                                                               \
  }                                                                                       \
  Tensor name##_all(const Tensor& self) {                                                 \
    Axes axes = reduce_axes(self.dim(), c10::nullopt);                                    \
    return functional(at::meta::name(to_meta(self)), [&](DType r, const Shape& s) {       \
      return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);                \
    });                                                                                   \
  }                                                                                       \
  Tensor& name##_all_out(const Tensor& self, Tensor& out) {                               \
    return into(                                                                          \
        out, [&](Tensor& mo) { at::meta::name##_outf(to_meta(self), mo); },               \
        [&](DType r, const Shape& s) {                                                    \
          Axes axes = reduce_axes(self.dim(), c10::nullopt);                              \
          return drop_axes(reduced(ReduceKind::KIND, self, axes, r), axes, s);            \
        });                                                                               \
  }
LOOM_BOOL_REDUCE(all, All)
LOOM_BOOL_REDUCE(any, Any)

// --- var, std ---

// Two passes, as eager: the mean, then the sum of squared deviations over N - correction
// (clamped at 0, so that too few elements give inf or nan as on the CPU).
std::pair<NodeRef, NodeRef> var_and_mean_of(const NodeRef& x, const Axes& axes, DType acc,
                                            double correction) {
  int64_t n = reduced_numel(x->shape, axes);
  NodeRef sum = reduce_value(ReduceKind::Sum, x, axes, acc);
  NodeRef mean = binary(Op::Div, sum, scalar_like(double(n), sum));
  NodeRef dev = binary(Op::Sub, x, expand(mean, x->shape));
  NodeRef ss = reduce_value(ReduceKind::Sum, binary(Op::Mul, dev, dev), axes, acc);
  double denom = std::max(0.0, double(n) - correction);
  return {binary(Op::Div, ss, scalar_like(denom, ss)), mean};
}

// The variance (of the real result dtype) and the mean (of the input's kind). A complex
// input's variance is the sum of its parts' variances, as the CPU computes it.
std::pair<NodeRef, NodeRef> var_and_mean(const Tensor& self, const Axes& axes, DType result,
                                         const Correction& c) {
  DType acc = acc_dtype(result);
  double correction = correction_value(c);
  NodeRef x = read_tensor(self);
  if (!is_complex(x->dtype)) return var_and_mean_of(cast(x, acc), axes, acc, correction);
  auto re = var_and_mean_of(cast(unary(Op::Real, x), acc), axes, acc, correction);
  auto im = var_and_mean_of(cast(unary(Op::Imag, x), acc), axes, acc, correction);
  return {binary(Op::Add, re.first, im.first), binary(Op::Complex, re.second, im.second)};
}

NodeRef var_value(const Tensor& self, const Axes& axes, DType r, const Correction& c,
                  bool take_sqrt) {
  NodeRef v = var_and_mean(self, axes, r, c).first;
  return take_sqrt ? unary(Op::Sqrt, v) : v;
}

// var/std's result as the CPU's std_var_out makes it: floating or complex input only, the
// reduced dims (wrapped, none twice) dropped or kept, of the input's real dtype, contiguous.
// PyTorch's own meta var/std is a Python decomposition: 28 us of a GPT step's layer norms,
// per call, and its errors were not the CPU's (an integer input's named mean(), a dim out
// of range was "tuple index out of range").
// `what` names the op as the CPU's message does ("std and var", "var_mean", "std_mean").
Tensor var_meta(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, const char* what) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              what, " only support floating point and complex dtypes");
  const auto mask = at::native::make_dim_mask(dim, self.dim());
  return at::detail::empty_meta(at::native::shape_from_dim_mask(self, mask, keepdim),
                                c10::toRealValueType(self.scalar_type()), c10::nullopt);
}

// var/std out= have no meta kernel: the out is resized to the functional result; the value is
// computed in out's floating dtype, as eager does, or for a complex input in the real dtype
// of out's (a complex out then holds the variance with no imaginary part). Returns the
// dtype to compute in.
DType match_var_out(Tensor& out, const Tensor& meta, const Tensor& self) {
  const c10::ScalarType t =
      self.is_complex() ? c10::toRealValueType(out.scalar_type()) : out.scalar_type();
  TORCH_CHECK(at::isFloatingType(t), "\"std_cpu\" not implemented for '", c10::toString(t), "'");
  at::native::resize_output(out, meta.sizes());
  return to_loom(t);
}

#define LOOM_VAR(name, SQRT)                                                                  \
  Tensor name##_fn(const Tensor& self, at::OptionalIntArrayRef dim, Correction correction,    \
                   bool keepdim) {                                                            \
    Tensor meta = var_meta(self, dim, keepdim, "std and var");                                \
    Axes axes = reduce_axes(self.dim(), dim);                                                 \
    return functional(meta, [&](DType r, const Shape& s) {                                    \
      return drop_axes(var_value(self, axes, r, correction, SQRT), axes, s);                  \
    });                                                                                       \
  }                                                                                           \
  Tensor& name##_out(const Tensor& self, at::OptionalIntArrayRef dim, Correction correction,  \
                     bool keepdim, Tensor& out) {                                             \
    Axes axes = reduce_axes(self.dim(), dim);                                                 \
    Tensor meta = var_meta(self, dim, keepdim, "std and var");                                \
    /* which dtypes of out the CPU takes, and its messages, are the running torch's (1.13 */  \
    /* has no Half sqrt for a complex input's std; 2.x refuses an integer out by its cast) */ \
    auto cpu_call = [&] {                                                                     \
      Tensor o = probe_out(out);                                                              \
      /* two elements: the variance of one is NaN, whose cast to an integer out raises */     \
      at::name##_outf(at::ones({2}, at::TensorOptions().dtype(self.scalar_type())),           \
                      std::vector<int64_t>{0}, correction, false, o);                         \
    };                                                                                        \
    LOOM_CPU_VERDICT(self.scalar_type(), out.scalar_type(), cpu_call());                      \
    DType r = match_var_out(out, meta, self);                                                 \
    EngineLock g(engine_mutex());                                                             \
    assign(out, drop_axes(var_value(self, axes, r, correction, SQRT), axes, out_shape(out))); \
    return out;                                                                               \
  }                                                                                           \
  std::tuple<Tensor, Tensor> name##_mean_fn(const Tensor& self, at::OptionalIntArrayRef dim,  \
                                            Correction correction, bool keepdim) {            \
    Tensor meta = var_meta(self, dim, keepdim, #name "_mean");                                \
    Axes axes = reduce_axes(self.dim(), dim);                                                 \
    EngineLock g(engine_mutex());                                                             \
    Tensor v = result_like(meta);                                                             \
    Tensor m = empty_loom(meta.sizes(), meta.strides(),                                       \
                          self.is_complex() ? self.scalar_type() : meta.scalar_type());       \
    auto vm = var_and_mean(self, axes, dtype_of(meta), correction);                           \
    NodeRef var = SQRT ? unary(Op::Sqrt, vm.first) : vm.first;                                \
    assign(v, drop_axes(var, axes, out_shape(v)));                                            \
    assign(m, drop_axes(vm.second, axes, out_shape(m)));                                      \
    return {v, m};                                                                            \
  }
LOOM_VAR(var, false)
LOOM_VAR(std, true)

// --- logsumexp ---

// max-shifted: log(sum(exp(x - m))) + m, with infinite maxima shifted by 0 (as eager).
// Complex input, which torch 2.x takes (1.13's meta kernel refuses it), is shifted by the
// maximum of its real part, as 2.x's CPU does.
NodeRef logsumexp_value(const Tensor& self, const Axes& axes, DType result) {
  DType acc = acc_dtype(result);
  NodeRef x = cast(read_tensor(self), acc);
  NodeRef re = is_complex(acc) ? unary(Op::Real, x) : x;
  NodeRef m = reduce_value(ReduceKind::Max, re, axes, re->dtype);
  m = cast(where(unary(Op::IsInf, m), scalar_like(0, m), m), acc);
  NodeRef e = unary(Op::Exp, binary(Op::Sub, x, expand(m, x->shape)));
  return binary(Op::Add, unary(Op::Log, reduce_value(ReduceKind::Sum, e, axes, acc)), m);
}

Tensor logsumexp_fn(const Tensor& self, at::IntArrayRef dim, bool keepdim) {
  Axes axes = reduce_axes(self.dim(), dim);
  return functional(at::logsumexp(to_meta(self), dim, keepdim), [&](DType r, const Shape& s) {
    return drop_axes(logsumexp_value(self, axes, r), axes, s);
  });
}
Tensor& logsumexp_out(const Tensor& self, at::IntArrayRef dim, bool keepdim, Tensor& out) {
  Axes axes = reduce_axes(self.dim(), dim);
  return into(
      out, [&](Tensor& mo) { at::logsumexp_outf(to_meta(self), dim, keepdim, mo); },
      [&](DType r, const Shape& s) { return drop_axes(logsumexp_value(self, axes, r), axes, s); });
}

// --- vector norms ---

NodeRef norm_value(const Tensor& self, double ord, const Axes& axes, DType result,
                   c10::optional<at::ScalarType> dtype) {
  DType acc = acc_dtype(result);
  NodeRef x = read_tensor(self);
  if (dtype.has_value()) x = cast(x, to_loom(*dtype));
  NodeRef a = is_complex(x->dtype) ? cast(unary(Op::Abs, x), acc) : unary(Op::Abs, cast(x, acc));
  auto sum = [&](const NodeRef& v) { return reduce_value(ReduceKind::Sum, v, axes, acc); };
  if (std::isinf(ord))
    return reduce_value(ord > 0 ? ReduceKind::Max : ReduceKind::Min, a, axes, acc);
  if (ord == 0) return sum(cast(binary(Op::Ne, a, scalar_like(0, a)), acc));
  if (ord == 1) return sum(a);
  if (ord == 2) return unary(Op::Sqrt, sum(binary(Op::Mul, a, a)));
  NodeRef s = sum(binary(Op::Pow, a, scalar_like(ord, a)));
  return binary(Op::Pow, s, scalar_like(1.0 / ord, s));
}

Tensor vector_norm_fn(const Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                      bool keepdim, c10::optional<at::ScalarType> dtype) {
  Tensor meta = at::meta::linalg_vector_norm(to_meta(self), ord, dim, keepdim, dtype);
  Axes axes = reduce_axes(self.dim(), dim);
  return functional(meta, [&](DType r, const Shape& s) {
    return drop_axes(norm_value(self, ord.toDouble(), axes, r, dtype), axes, s);
  });
}
Tensor& vector_norm_out(const Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                        bool keepdim, c10::optional<at::ScalarType> dtype, Tensor& out) {
  Axes axes = reduce_axes(self.dim(), dim);
  return into(
      out,
      [&](Tensor& mo) {
        at::meta::linalg_vector_norm_outf(to_meta(self), ord, dim, keepdim, dtype, mo);
      },
      [&](DType r, const Shape& s) {
        return drop_axes(norm_value(self, ord.toDouble(), axes, r, dtype), axes, s);
      });
}

// at::norm (what Tensor.norm reaches through frobenius_norm) with the same meaning.
double norm_ord(const c10::optional<c10::Scalar>& p) { return p ? p->toDouble() : 2.0; }

Tensor norm_dim(const Tensor& self, const c10::optional<c10::Scalar>& p, at::IntArrayRef dim,
                bool keepdim) {
  Tensor meta = at::meta::norm(to_meta(self), p, dim, keepdim);
  Axes axes = reduce_axes(self.dim(), dim);
  return functional(meta, [&](DType r, const Shape& s) {
    return drop_axes(norm_value(self, norm_ord(p), axes, r, c10::nullopt), axes, s);
  });
}
Tensor norm_dim_dtype(const Tensor& self, const c10::optional<c10::Scalar>& p, at::IntArrayRef dim,
                      bool keepdim, at::ScalarType dtype) {
  Tensor meta = at::meta::norm(to_meta(self), p, dim, keepdim, dtype);
  Axes axes = reduce_axes(self.dim(), dim);
  return functional(meta, [&](DType r, const Shape& s) {
    return drop_axes(norm_value(self, norm_ord(p), axes, r, dtype), axes, s);
  });
}
Tensor& norm_dim_out(const Tensor& self, const c10::optional<c10::Scalar>& p, at::IntArrayRef dim,
                     bool keepdim, Tensor& out) {
  Axes axes = reduce_axes(self.dim(), dim);
  return into(
      out, [&](Tensor& mo) { at::meta::norm_outf(to_meta(self), p, dim, keepdim, mo); },
      [&](DType r, const Shape& s) {
        return drop_axes(norm_value(self, norm_ord(p), axes, r, c10::nullopt), axes, s);
      });
}
Tensor norm_all(const Tensor& self, const c10::Scalar& p) {
  Tensor meta = at::norm(to_meta(self), p);
  Axes axes = reduce_axes(self.dim(), c10::nullopt);
  return functional(meta, [&](DType r, const Shape& s) {
    return drop_axes(norm_value(self, p.toDouble(), axes, r, c10::nullopt), axes, s);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum", sum_all);
  m.impl("sum.out", sum_all_out);
  m.impl("sum.dim_IntList", sum_dim);
  m.impl("sum.IntList_out", sum_dim_out);
  m.impl("mean", mean_all);
  m.impl("mean.dim", mean_dim);
  m.impl("mean.out", mean_dim_out);
  m.impl("prod", prod_all);
  m.impl("prod.dim_int", prod_dim);
  m.impl("prod.int_out", prod_dim_out);
  m.impl("amax", amax_fn);
  m.impl("amax.out", amax_out);
  m.impl("amin", amin_fn);
  m.impl("amin.out", amin_out);
  m.impl("max", max_all);
  m.impl("max.dim", max_dim);
  m.impl("max.dim_max", max_dim_out);
  m.impl("min", min_all);
  m.impl("min.dim", min_dim);
  m.impl("min.dim_min", min_dim_out);
  m.impl("max.unary_out", extremum_all_out<ReduceKind::Max>);  // 2.x's; no schema in 1.13
  m.impl("min.unary_out", extremum_all_out<ReduceKind::Min>);
  m.impl("argmax", argmax_fn);
  m.impl("argmax.out", argmax_out);
  m.impl("argmin", argmin_fn);
  m.impl("argmin.out", argmin_out);
  m.impl("all", all_all);
  m.impl("all.all_out", all_all_out);
  m.impl("all.dim", all_dim);
  m.impl("all.out", all_dim_out);
  m.impl("any", any_all);
  m.impl("any.all_out", any_all_out);
  m.impl("any.dim", any_dim);
  m.impl("any.out", any_dim_out);
  m.impl("var.correction", var_fn);
  m.impl("var.correction_out", var_out);
  m.impl("var_mean.correction", var_mean_fn);
  m.impl("std.correction", std_fn);
  m.impl("std.correction_out", std_out);
  m.impl("std_mean.correction", std_mean_fn);
  m.impl("logsumexp", logsumexp_fn);
  m.impl("logsumexp.out", logsumexp_out);
  m.impl("linalg_vector_norm", vector_norm_fn);
  m.impl("linalg_vector_norm.out", vector_norm_out);
  m.impl("norm.Scalar", norm_all);
  m.impl("norm.ScalarOpt_dim", norm_dim);
  m.impl("norm.ScalarOpt_dim_dtype", norm_dim_dtype);
  m.impl("norm.out", norm_dim_out);
}

}  // namespace loom::aten
