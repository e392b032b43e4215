// Reads and writes along one dim at indices from a tensor: gather, the scatter family
// (scatter, scatter_add, scatter_reduce) and index_add/index_copy/index_fill. Each is a
// Gather or Scatter node whose element index is computed, and checked, in the kernel.
#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <torch/library.h>

#include <functional>
#include <limits>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;
using c10::Scalar;
using Combine = std::optional<ReduceKind>;

// A 0-dim tensor is indexed as a 1-element vector along dim 0.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

// Storage indices of `t` over the iteration `shape`, where the coordinate along `dim` is
// `idx` (Int64, of `shape`), checked, and every other coordinate is the iteration's own.
NodeRef along(const Tensor& t, int64_t dim, const NodeRef& idx, bool wrap, bool index_error,
              const std::string& msg) {
  std::vector<NodeRef> coord;
  for (int64_t d = 0; d < t.dim(); ++d)
    coord.push_back(d == dim ? checked(idx, t.size(dim), wrap, index_error, msg)
                             : iota(DType::Int64, idx->shape, int(d)));
  return storage_index(t, coord);
}

// A 1-D index tensor spread over `shape` along `dim`.
NodeRef spread(const Tensor& index, const Shape& shape, int64_t dim) {
  IndexMap m{{0}, {}, {}};
  for (int64_t j = 0; j < int64_t(shape.size()); ++j) {
    m.dim_of.push_back(j == dim ? 0 : -1);
    m.mult.push_back(j == dim ? 1 : 0);
  }
  return reindex(index_value(index.reshape({-1}), {index.numel()}), shape, m);
}

// `src` read over the shape of `index` (a scatter's source may be larger than its index).
NodeRef source_over(const Tensor& src, const Tensor& index) {
  Tensor s = as_1d(src);
  return read_tensor(s.as_strided(as_1d(index).sizes(), s.strides(), s.storage_offset()));
}

// out takes self's value (unless it is self), in the layout the meta result gave it; as
// on CPU, it may not overlap the tensors the op reads.
void start_from(Tensor& out, const Tensor& self, const Tensor& meta,
                std::initializer_list<Tensor> inputs) {
  at::assert_no_internal_overlap(out);
  for (const Tensor& t : inputs)
    if (t.defined() && is_loom(t)) at::assert_no_overlap(out, t);
  if (out.is_same(self)) return;
  match_out(out, meta);
  assign(out, read_tensor(self));
}

// The lowest and highest values of an integer dtype.
std::pair<int64_t, int64_t> integer_range(c10::ScalarType t) {
  int64_t lo = 0, hi = 0;
  AT_DISPATCH_INTEGRAL_TYPES(t, "integer_range", [&] {
    lo = std::numeric_limits<scalar_t>::lowest();
    hi = std::numeric_limits<scalar_t>::max();
  });
  return {lo, hi};
}

// NOTE [Scatters of reduced floats]: torch 2.x's CPU scatter_add, scatter(reduce=),
// scatter_reduce and index_add into a self of several dims accumulate float16 and bfloat16
// in float and round once at the end (self's values included); 1.13's round after every
// update (256 + 1 + 1 in bfloat16: 258 against 256). One call of the CPU's op tells which
// the running torch does, and Loom accumulates as it.
bool cpu_scatters_in_float() {
  static const bool in_float =
      at::full({1, 1}, 256.0, at::kBFloat16)
          .scatter_add_(0, at::zeros({2, 1}, at::kLong), at::ones({2, 1}, at::kBFloat16))
          .item<float>() == 258.0f;
  return in_float;
}

// Runs `write` (updates of out's elements) on `out`, or, where `in_float` and out is float16
// or bfloat16, on a float copy of out's values that is then stored back, rounded once.
void accumulate_as_cpu(Tensor& out, bool in_float, const std::function<void(Tensor&)>& write) {
  const c10::ScalarType st = out.scalar_type();
  if (!in_float || (st != at::kHalf && st != at::kBFloat16)) return write(out);
  EngineLock g(engine_mutex());
  Tensor acc = empty_loom(out.sizes(), at::kFloat);
  assign(acc, read_tensor(out));
  write(acc);
  assign(out, read_tensor(acc));
}

// --- gather ---

Tensor& gather_into(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  if (index.numel() == 0) return out;
  Tensor s = as_1d(self), i = as_1d(index);
  EngineLock g(engine_mutex());
  check_now(i, s.size(dim), false, false, bounds_message(dim, s.size(dim)));
  NodeRef idx = index_value(i, shape_of(i.sizes()));
  NodeRef at = along(s, dim, idx, false, false, bounds_message(dim, s.size(dim)));
  NodeRef v = gather(buffer_of(self), to_loom(self.scalar_type()), at);
  if (out.dim() == 0) v = reindex(v, {}, IndexMap{{0}, {}, {}});
  assign(out, v);
  return out;
}

Tensor gather_fn(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  check_operands("gather", {self, index});
  Tensor meta = at::meta::gather(to_meta(self), dim, to_meta(index), sparse_grad);
  Tensor out = result_like(meta);
  return gather_into(self, dim, index, out);
}

Tensor& gather_out(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad,
                   Tensor& out) {
  check_operands("gather", {self, index, out});
  Tensor meta = at::meta::gather(to_meta(self), dim, to_meta(index), sparse_grad);
  match_out(out, meta);
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  return gather_into(self, dim, index, out);
}

// --- scatter ---

// Writes value (over index's shape) into out along dim at index.
void scatter_along(Tensor& out, int64_t dim, const Tensor& index, const NodeRef& value,
                   Combine combine) {
  if (index.numel() == 0) return;
  Tensor o = as_1d(out), i = as_1d(index);
  dim = at::maybe_wrap_dim(dim, o.dim());
  DType dtype = to_loom(out.scalar_type());
  check_now(i, o.size(dim), false, false, bounds_message(dim, o.size(dim)));
  NodeRef idx = index_value(i, shape_of(i.sizes()));
  NodeRef at = along(o, dim, idx, false, false, bounds_message(dim, o.size(dim)));
  scatter(buffer_of(out), dtype, at, cast(value, dtype), combine);
}

Combine reduce_of(c10::string_view reduce) {
  if (reduce == "add" || reduce == "sum") return ReduceKind::Sum;
  if (reduce == "multiply" || reduce == "prod") return ReduceKind::Prod;
  if (reduce == "amax") return ReduceKind::Max;
  if (reduce == "amin") return ReduceKind::Min;
  return std::nullopt;
}

// One body for the functional, in-place and out= forms of a scatter op. `meta_op` runs
// the op on meta tensors (checks, result layout); `value` builds the scattered values.
template <typename Meta, typename Value>
Tensor& scatter_common(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                       Tensor& out, Meta meta_op, Value value, Combine combine) {
  check_operands("scatter", {self, index, src});
  Tensor meta = meta_op();
  EngineLock g(engine_mutex());
  start_from(out, self, meta, {index, src});
  if (index.numel() == 0) return out;
  accumulate_as_cpu(out, combine.has_value() && cpu_scatters_in_float(),
                    [&](Tensor& t) { scatter_along(t, dim, index, value(), combine); });
  return out;
}

// A scalar scattered into `self`, converted (and checked) as the CPU converts it.
NodeRef scattered_scalar(const Scalar& value, const Tensor& index, const Tensor& self) {
  check_scalar_fits(value, self.scalar_type());
  return scalar_node(value, shape_of(as_1d(index).sizes()), to_loom(self.scalar_type()));
}

#define LOOM_SCATTER_FORMS(name, overload, PARAMS, ARGS, META, SRC, VALUE, COMBINE)               \
  Tensor& name##_into(const Tensor& self, int64_t dim, const Tensor& index PARAMS, Tensor& out) { \
    return scatter_common(                                                                        \
        self, dim, index, SRC, out,                                                               \
        [&] { return at::meta::overload(to_meta(self), dim, to_meta(index) META); },              \
        [&] { return VALUE; }, COMBINE);                                                          \
  }                                                                                               \
  Tensor name##_fn(const Tensor& self, int64_t dim, const Tensor& index PARAMS) {                 \
    Tensor out;                                                                                   \
    {                                                                                             \
      Tensor meta = at::meta::overload(to_meta(self), dim, to_meta(index) META);                  \
      out = result_like(meta);                                                                    \
    }                                                                                             \
    return name##_into(self, dim, index ARGS, out);                                               \
  }                                                                                               \
  Tensor& name##_(Tensor& self, int64_t dim, const Tensor& index PARAMS) {                        \
    return name##_into(self, dim, index ARGS, self);                                              \
  }                                                                                               \
  Tensor& name##_out(const Tensor& self, int64_t dim, const Tensor& index PARAMS, Tensor& out) {  \
    return name##_into(self, dim, index ARGS, out);                                               \
  }

#define P(...) , __VA_ARGS__
LOOM_SCATTER_FORMS(scatter_src, scatter, P(const Tensor& src), P(src), P(to_meta(src)), src,
                   source_over(src, index), std::nullopt)
LOOM_SCATTER_FORMS(scatter_value, scatter, P(const Scalar& value), P(value), P(value), Tensor(),
                   scattered_scalar(value, index, self), std::nullopt)
LOOM_SCATTER_FORMS(scatter_reduce_src, scatter, P(const Tensor& src, c10::string_view reduce),
                   P(src, reduce), P(to_meta(src), reduce), src, source_over(src, index),
                   reduce_of(reduce))
LOOM_SCATTER_FORMS(scatter_reduce_value, scatter, P(const Scalar& value, c10::string_view reduce),
                   P(value, reduce), P(value, reduce), Tensor(),
                   scattered_scalar(value, index, self), reduce_of(reduce))
LOOM_SCATTER_FORMS(scatter_add, scatter_add, P(const Tensor& src), P(src), P(to_meta(src)), src,
                   source_over(src, index), ReduceKind::Sum)
#undef P

// scatter_reduce.two: sum, prod, mean, amax, amin, with or without self's own values.
Scalar identity_of(c10::string_view reduce, c10::ScalarType t) {
  bool flt = at::isFloatingType(t);
  if (reduce == "prod") return 1;
  if (reduce == "amax")
    return flt ? Scalar(-std::numeric_limits<double>::infinity())
               : AT_DISPATCH_INTEGRAL_TYPES_AND(at::kBool, t, "loom_lowest", [] {
                   return Scalar(std::numeric_limits<scalar_t>::lowest());
                 });
  if (reduce == "amin")
    return flt ? Scalar(std::numeric_limits<double>::infinity())
               : AT_DISPATCH_INTEGRAL_TYPES_AND(at::kBool, t, "loom_highest", [] {
                   return Scalar(std::numeric_limits<scalar_t>::max());
                 });
  return 0;
}

Tensor& scatter_reduce_two_into(const Tensor& self, int64_t dim, const Tensor& index,
                                const Tensor& src, c10::string_view reduce, bool include_self,
                                Tensor& out) {
  check_operands("scatter_reduce", {self, index, src});
  Tensor meta = at::meta::scatter_reduce(to_meta(self), dim, to_meta(index), to_meta(src), reduce,
                                         include_self);
  if (reduce == "amax" || reduce == "amin") {
    std::string kernel = "scatter_gather_tensor_cpu_reduce_" + std::string(reduce);
    check_not_complex(kernel.c_str(), self.scalar_type());
  }
  {
    EngineLock g(engine_mutex());
    start_from(out, self, meta, {index, src});
  }
  if (index.numel() == 0) return out;
  const bool mean = reduce == "mean";
  accumulate_as_cpu(out, cpu_scatters_in_float(), [&](Tensor& t) {
    EngineLock g(engine_mutex());
    if (!include_self)
      scatter_along(t, dim, index,
                    scalar_node(identity_of(reduce, out.scalar_type()),
                                shape_of(as_1d(index).sizes()), to_loom(t.scalar_type())),
                    std::nullopt);
    scatter_along(t, dim, index, source_over(src, index),
                  mean ? ReduceKind::Sum : *reduce_of(reduce));
  });
  if (mean) {  // the sums, in out's dtype, divided by the counts
    Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    count.scatter_add_(dim, index, at::ones_like(src));
    count.masked_fill_(count == 0, 1);
    if (out.is_floating_point() || out.is_complex())
      out.div_(count);
    else
      out.div_(count, "floor");
  }
  return out;
}

Tensor scatter_reduce_two_fn(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& src, c10::string_view reduce, bool include_self) {
  Tensor meta = at::meta::scatter_reduce(to_meta(self), dim, to_meta(index), to_meta(src), reduce,
                                         include_self);
  Tensor out = result_like(meta);
  return scatter_reduce_two_into(self, dim, index, src, reduce, include_self, out);
}
Tensor& scatter_reduce_two_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                            c10::string_view reduce, bool include_self) {
  return scatter_reduce_two_into(self, dim, index, src, reduce, include_self, self);
}
Tensor& scatter_reduce_two_out(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, c10::string_view reduce, bool include_self,
                               Tensor& out) {
  return scatter_reduce_two_into(self, dim, index, src, reduce, include_self, out);
}

// --- index_add, index_copy, index_fill: a 1-D index along dim ---

// PyTorch's meta function of index_add and index_reduce runs TensorIterator's checks on
// slice 0 along dim of the result and of the source, on the meta device only, which raised
// for an empty source (no indices) where the CPU's kernel does nothing. There the checks
// run on stand-ins one slice long, and the result takes self's sizes.
template <class Meta>
Tensor index_meta(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                  Meta&& meta) {
  const int64_t n = self.dim();
  const int64_t d = dim < 0 ? dim + n : dim;
  if (n == 0 || d < 0 || d >= n || index.numel() != 0 || d >= source.dim() || source.size(d) != 0)
    return meta(to_meta(self), to_meta(index), to_meta(source));
  auto one_slice = [&](const Tensor& t) {
    std::vector<int64_t> sizes = t.sizes().vec();
    sizes[size_t(d)] = 1;
    return at::empty(sizes, t.options().device(at::kMeta));
  };
  Tensor result = meta(self.size(d) == 0 ? one_slice(self) : to_meta(self),
                       at::zeros({1}, index.options().device(at::kMeta)), one_slice(source));
  return at::empty(self.sizes(), result.options());
}

void index_write(Tensor& out, int64_t dim, const Tensor& index, const Shape& shape,
                 const NodeRef& value, Combine combine, bool wrap, const std::string& msg,
                 bool scaled = false, bool index_error = true) {
  if (numel(shape) == 0) return;
  Tensor o = as_1d(out);
  check_now(index, o.size(dim), wrap, index_error, msg);
  NodeRef at = along(o, dim, spread(index, shape, dim), wrap, index_error, msg);
  scatter(buffer_of(out), to_loom(out.scalar_type()), at, value, combine, scaled);
}

// Whether the running torch's CPU runs index_add into a self of several dims as a scatter_add
// where it can (2.x: see index_add_into): an index out of range then gets scatter's
// RuntimeError "index 5 is out of bounds for dimension 0 with size 2" instead of 1.13's
// IndexError "index out of range in self". One call of the CPU's op tells.
bool cpu_index_add_runs_scatter() {
  static const bool bounds = [] {
    try {
      at::zeros({2, 1}).index_add(0, at::full({1}, 5, at::kLong), at::ones({1, 1}));
    } catch (const c10::IndexError&) {
      return false;
    } catch (const c10::Error&) {
      return true;
    }
    return false;
  }();
  return bounds;
}

Tensor& index_add_into(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       const Scalar& alpha, Tensor& out) {
  check_operands("index_add", {self, index, source});
  Tensor meta = index_meta(self, dim, index, source, [&](auto s, auto i, auto src) {
    return at::meta::index_add(s, dim, i, src, alpha);
  });
  dim = at::maybe_wrap_dim(dim, self.dim());
  EngineLock g(engine_mutex());
  start_from(out, self, meta, {index, source});
  // torch 2.x's CPU runs index_add into several dims as a scatter_add where it can: along
  // the first or last dim, alpha 1, int64 indices, source and self of the same sizes apart
  // from dim. Then an index out of range and float16/bfloat16 sums are scatter_add's.
  const bool several = out.dim() > 1;
  bool as_scatter = several && (dim == 0 || dim == out.dim() - 1) && alpha.equal(1) &&
                    index.scalar_type() == at::kLong && source.dim() == out.dim();
  for (int64_t d = 0; as_scatter && d < out.dim(); ++d)
    as_scatter = d == dim || out.size(d) == source.size(d);
  const bool bounds = as_scatter && cpu_index_add_runs_scatter();
  accumulate_as_cpu(out, bounds && cpu_scatters_in_float(), [&](Tensor& t) {
    DType dtype = to_loom(t.scalar_type());
    Tensor src = as_1d(source);
    Shape shape = shape_of(src.sizes());
    NodeRef v = cast(read_tensor(src), dtype);
    const bool one = alpha.isIntegral(true) && alpha.toLong() == 1;
    if (!one) v = binary(Op::Mul, v, scalar_node(alpha, shape, dtype));
    // The CPU adds each slice of a result of several dims with an alpha (the product and the
    // sum rounded once) and the elements of a 1-D one as a product, then a sum.
    index_write(t, dim, index, shape, v, ReduceKind::Sum, false,
                bounds ? bounds_message(dim, t.size(dim)) : "index out of range in self",
                !one && several, !bounds);
  });
  return out;
}

Tensor index_add_fn(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                    const Scalar& alpha) {
  Tensor out = result_like(index_meta(self, dim, index, source, [&](auto s, auto i, auto src) {
    return at::meta::index_add(s, dim, i, src, alpha);
  }));
  return index_add_into(self, dim, index, source, alpha, out);
}
Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha) {
  return index_add_into(self, dim, index, source, alpha, self);
}
Tensor& index_add_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha, Tensor& out) {
  return index_add_into(self, dim, index, source, alpha, out);
}

// index_reduce: each source slice combined into the slice of self its index names (prod,
// amax, amin, or a sum then divided by the count for mean), the indexed slices first reset
// to the reduction's identity when self is not included, as the CPU does.
Tensor& index_reduce_into(const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& source, c10::string_view reduce, bool include_self,
                          Tensor& out) {
  check_operands("index_reduce", {self, index, source});
  Tensor meta = index_meta(self, dim, index, source, [&](auto s, auto i, auto src) {
    return at::meta::index_reduce(s, dim, i, src, reduce, include_self);
  });
  TORCH_WARN_ONCE("index_reduce() is in beta and the API may change at any time.");
  const c10::ScalarType st = self.scalar_type();
  // The CPU's kernels for bool and complex: only some run.
  const bool odd = st == at::kBool || at::isComplexType(st);
  const char* kernel = !include_self            ? "index_reduce_func_exclude_input_init"
                       : self.dim() <= 1        ? "index_func_"
                       : !at::isComplexType(st) ? nullptr
                       : reduce == "amax"       ? "maximum_cpu"
                       : reduce == "amin"       ? "minimum_cpu"
                                                : nullptr;
  TORCH_CHECK(!odd || !kernel, "\"", kernel, "\" not implemented for '", c10::toString(st), "'");
  dim = at::maybe_wrap_dim(dim, self.dim());
  {
    EngineLock g(engine_mutex());
    start_from(out, self, meta, {index, source});
  }
  const bool mean = reduce == "mean";
  if (!include_self) {
    c10::Scalar init = 0;
    const bool is_float = at::isFloatingType(st);
    if (reduce == "prod")
      init = 1;
    else if (reduce == "amax")
      init = is_float ? c10::Scalar(-INFINITY) : c10::Scalar(integer_range(st).first);
    else if (reduce == "amin")
      init = is_float ? c10::Scalar(INFINITY) : c10::Scalar(integer_range(st).second);
    out.index_fill_(dim, index.to(at::kLong), init);
  }
  {
    EngineLock g(engine_mutex());
    DType dtype = to_loom(st);
    Tensor src = as_1d(source);
    Shape shape = shape_of(src.sizes());
    Combine combine = mean ? Combine(ReduceKind::Sum) : reduce_of(reduce);
    index_write(out, dim, index, shape, cast(read_tensor(src), dtype), combine, false,
                "index out of range in self");
  }
  if (mean) {
    Tensor counts = include_self ? at::ones_like(out) : at::zeros_like(out);
    counts.index_add_(dim, index, at::ones_like(source));
    counts.masked_fill_(counts == 0, 1);
    if (at::isFloatingType(st) || at::isComplexType(st))
      out.div_(counts);
    else
      out.div_(counts, "floor");
  }
  return out;
}
Tensor index_reduce_fn(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       c10::string_view reduce, bool include_self) {
  Tensor out = result_like(index_meta(self, dim, index, source, [&](auto s, auto i, auto src) {
    return at::meta::index_reduce(s, dim, i, src, reduce, include_self);
  }));
  return index_reduce_into(self, dim, index, source, reduce, include_self, out);
}
Tensor& index_reduce_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      c10::string_view reduce, bool include_self) {
  return index_reduce_into(self, dim, index, source, reduce, include_self, self);
}
Tensor& index_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         c10::string_view reduce, bool include_self, Tensor& out) {
  return index_reduce_into(self, dim, index, source, reduce, include_self, out);
}

Tensor& index_copy_into(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                        Tensor& out) {
  check_operands("index_copy", {self, index, source});
  Tensor meta = at::meta::index_copy(to_meta(self), dim, to_meta(index), to_meta(source));
  dim = at::maybe_wrap_dim(dim, self.dim());
  EngineLock g(engine_mutex());
  start_from(out, self, meta, {index, source});
  Tensor src = as_1d(source);
  Shape shape = shape_of(src.sizes());
  int64_t size = as_1d(out).size(dim);
  index_write(out, dim, index, shape, cast(read_tensor(src), to_loom(out.scalar_type())),
              std::nullopt, false, bounds_message(dim, size, "index_copy_(): "));
  return out;
}

Tensor index_copy_fn(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  Tensor out =
      result_like(at::meta::index_copy(to_meta(self), dim, to_meta(index), to_meta(source)));
  return index_copy_into(self, dim, index, source, out);
}
Tensor& index_copy_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_copy_into(self, dim, index, source, self);
}
Tensor& index_copy_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                       Tensor& out) {
  return index_copy_into(self, dim, index, source, out);
}

Tensor& index_fill_value(Tensor& self, int64_t dim, const Tensor& index,
                         const std::function<NodeRef(const Shape&, DType)>& value) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::assert_no_overlap(self, index);
  warn_if_expanded(self, "index_fill_", "tensor[mask] = scalar");
  Tensor s = as_1d(self);
  Shape shape = shape_of(s.sizes());
  shape[dim] = index.numel();
  EngineLock g(engine_mutex());
  index_write(self, dim, index, shape, value(shape, to_loom(self.scalar_type())), std::nullopt,
              true, bounds_message(dim, s.size(dim)));
  return self;
}

Tensor& index_fill_scalar(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  check_operands("index_fill_", {self, index});
  to_meta(self).index_fill_(dim, to_meta(index), value);
  TORCH_CHECK(!value.isComplex() || self.is_complex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  check_scalar_fits(value, self.scalar_type());
  return index_fill_value(self, dim, index, [&](const Shape& shape, DType dtype) {
    return scalar_node(value, shape, dtype);
  });
}

Tensor& index_fill_tensor(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  check_operands("index_fill_", {self, index});
  TORCH_CHECK(value.dim() == 0,
              "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (!is_loom(value) || (value.is_complex() && !self.is_complex()))
    return index_fill_scalar(self, dim, index, value.item());
  to_meta(self).index_fill_(dim, to_meta(index), to_meta(value));
  return index_fill_value(self, dim, index, [&](const Shape& shape, DType dtype) {
    return operand(value, shape, dtype);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", TORCH_FN(gather_fn));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src", TORCH_FN(scatter_src_fn));
  m.impl("scatter_.src", TORCH_FN(scatter_src_));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value", TORCH_FN(scatter_value_fn));
  m.impl("scatter_.value", TORCH_FN(scatter_value_));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce", TORCH_FN(scatter_reduce_src_fn));
  m.impl("scatter_.reduce", TORCH_FN(scatter_reduce_src_));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_src_out));
  m.impl("scatter.value_reduce", TORCH_FN(scatter_reduce_value_fn));
  m.impl("scatter_.value_reduce", TORCH_FN(scatter_reduce_value_));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_reduce_value_out));
  m.impl("scatter_add", TORCH_FN(scatter_add_fn));
  m.impl("scatter_add_", TORCH_FN(scatter_add_));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two", TORCH_FN(scatter_reduce_two_fn));
  m.impl("scatter_reduce_.two", TORCH_FN(scatter_reduce_two_));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
  m.impl("index_reduce", TORCH_FN(index_reduce_fn));
  m.impl("index_reduce_", TORCH_FN(index_reduce_));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("index_add", TORCH_FN(index_add_fn));
  m.impl("index_add_", TORCH_FN(index_add_));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_copy", TORCH_FN(index_copy_fn));
  m.impl("index_copy_", TORCH_FN(index_copy_));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor));
}

}  // namespace loom::aten
