// segment_reduce and its backward on Loom: sum, mean, max, min and prod over segments of
// one axis, given by lengths or offsets per row of the dims before it. The segments are
// read on the host, as the CPU reads them (its checks read them too); the reductions run
// in kernels over a dense (rows, segments, longest segment, inner) layout.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>

#include "aten/pointwise.h"

namespace loom::aten {

namespace {

using at::Tensor;
using namespace expr;
using OptTensor = c10::optional<Tensor>;
using OptScalar = c10::optional<c10::Scalar>;

enum class Kind { Max, Mean, Min, Sum, Prod };

Kind kind_of(c10::string_view reduce) {
  if (reduce == "max") return Kind::Max;
  if (reduce == "mean") return Kind::Mean;
  if (reduce == "min") return Kind::Min;
  if (reduce == "sum") return Kind::Sum;
  if (reduce == "prod") return Kind::Prod;
  // the running torch's words for it (2.x lists the names it takes)
  LOOM_CHECK_AS_CPU(false, at::segment_reduce(at::zeros({1}), reduce, at::ones({1}, at::kLong)),
                    "unsupported reduction given! ", reduce);
}

// Data as (rows, along, inner) around `axis`; segments per row, from the host.
struct Segments {
  int64_t rows = 1, along = 0, inner = 1, count = 0, longest = 0;
  std::vector<int64_t> start, len;  // rows * count
};

Segments read_segments(const Tensor& data, int64_t axis, const Tensor& spec, bool offsets) {
  Segments g;
  for (int64_t d = 0; d < axis; ++d) g.rows *= data.size(d);
  g.along = data.size(axis);
  for (int64_t d = axis + 1; d < data.dim(); ++d) g.inner *= data.size(d);
  Tensor host = spec.to(at::kLong).cpu().contiguous();
  const int64_t* p = host.data_ptr<int64_t>();
  const int64_t width = spec.size(spec.dim() - 1);
  g.count = offsets ? width - 1 : width;
  for (int64_t r = 0; r < g.rows; ++r) {
    int64_t end = offsets ? p[r * width] : 0;
    for (int64_t s = 0; s < g.count; ++s) {
      const int64_t begin = end;
      int64_t n;
      if (offsets) {
        end = p[r * width + s + 1];
        n = end - begin;
      } else {
        n = p[r * width + s];
        end += n;
      }
      TORCH_CHECK(n >= 0);
      TORCH_CHECK(begin >= 0 && end <= g.along, "segment_reduce(): segment [", begin, ", ", end,
                  ") is out of bounds for data of size ", g.along, " along its axis");
      g.start.push_back(begin);
      g.len.push_back(n);
      g.longest = std::max(g.longest, n);
    }
  }
  return g;
}

double identity(Kind k) {
  switch (k) {
    case Kind::Max: return -INFINITY;
    case Kind::Min: return INFINITY;
    case Kind::Prod: return 1;
    default: return 0;
  }
}

// The dense layout (rows, count, longest, inner): each segment's elements in order, and
// whether the position holds one.
struct Dense {
  Shape shape;
  NodeRef value, valid, len;  // len: the segment's length, broadcast
};

Dense dense(const Tensor& data3, const Segments& g, DType acc) {
  Dense d;
  const int64_t longest = std::max<int64_t>(g.longest, 1);
  d.shape = {g.rows, g.count, longest, g.inner};
  IndexMap per_segment{{0, 0}, {0, 1, -1, -1}, {1, 1, 0, 0}};
  NodeRef start = reindex(index_value(loom_tensor_of(g.start, {g.rows, g.count}), {g.rows, g.count}),
                          d.shape, per_segment);
  d.len = reindex(index_value(loom_tensor_of(g.len, {g.rows, g.count}), {g.rows, g.count}), d.shape,
                  per_segment);
  NodeRef l = iota(DType::Int64, d.shape, 2);
  d.valid = binary(Op::Lt, l, d.len);
  NodeRef at = where(d.valid, start + l, int_const(0, d.shape));
  NodeRef element = storage_index(data3, {iota(DType::Int64, d.shape, 0), at,
                                          iota(DType::Int64, d.shape, 3)});
  d.value = cast(gather(buffer_of(data3), to_loom(data3.scalar_type()), element), acc);
  return d;
}

NodeRef initial_value(const OptScalar& initial, Kind k, DType acc, const Shape& s) {
  if (initial) return constant(loom::Scalar::of_float(initial->to<double>()), acc, s);
  return constant(loom::Scalar::of_float(identity(k)), acc, s);
}

// The CPU's fold of a segment, starting from `initial` (or the kind's identity).
NodeRef segment_values(const Dense& d, Kind k, const OptScalar& initial, DType acc) {
  Shape r = d.shape;
  r[2] = 1;
  NodeRef id = constant(loom::Scalar::of_float(identity(k)), acc, d.shape);
  NodeRef v = where(d.valid, d.value, id);
  NodeRef init = initial_value(initial, k, acc, r);
  if (k == Kind::Max || k == Kind::Min) {
    // NaN once seen stays; otherwise the extreme of the initial value and the elements.
    NodeRef m = reduce(k == Kind::Max ? ReduceKind::Max : ReduceKind::Min, v, {2}, acc);
    NodeRef pick = binary(k == Kind::Max ? Op::Gt : Op::Lt, m, init);
    NodeRef nan = binary(Op::LogicalOr, unary(Op::IsNan, m), unary(Op::IsNan, init));
    NodeRef nan_value = where(unary(Op::IsNan, m), m, init);
    return where(nan, nan_value, where(pick, m, init));
  }
  if (k == Kind::Prod) return init * reduce(ReduceKind::Prod, v, {2}, acc);
  NodeRef total = init + reduce(ReduceKind::Sum, v, {2}, acc);
  if (k == Kind::Sum) return total;
  NodeRef len = reindex(d.len, r, IndexMap{{0, 0, 0, 0}, {0, 1, 2, 3}, {1, 1, 1, 1}});
  NodeRef mean = where(unary(Op::IsNan, total), total, total / cast(len, acc));
  NodeRef empty = binary(Op::Eq, len, int_const(0, r));
  return where(empty, initial ? init : constant(loom::Scalar::of_float(NAN), acc, r), mean);
}

void check_dtype(const Tensor& data) {
  check_kernel_dtype("_segment_reduce_cpu", data.scalar_type(), kFloat | kHalf);
}

Tensor segment_reduce(const Tensor& data, c10::string_view reduce, const OptTensor& lengths,
                      const OptTensor& indices, const OptTensor& offsets, int64_t axis,
                      bool unsafe, const OptScalar& initial) {
  check_operands("segment_reduce", {data});
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(data.numel() > 0);
  TORCH_CHECK(!has(indices), "segment_reduce(): indices based reduction is not supported yet.");
  TORCH_CHECK(has(lengths) || has(offsets),
              "segment_reduce(): Either lengths or offsets must be defined.")
  const Kind k = kind_of(reduce);
  const bool by_offsets = has(offsets);
  const Tensor& spec = by_offsets ? *offsets : *lengths;
  TORCH_CHECK(data.dim() >= spec.dim());
  TORCH_CHECK(axis == spec.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ",
              by_offsets ? "offsets" : "lengths", " but got ", axis, ".");
  if (!by_offsets && !unsafe) {
    Tensor host = spec.cpu();
    TORCH_CHECK(host.min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(at::all(host.sum({-1}) == data.size(axis)).item<bool>(),
                "segment_reduce(): Expected all rows of lengths along axis ",
                "to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  check_dtype(data);
  Segments g = read_segments(data, axis, spec, by_offsets);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[size_t(axis)] = g.count;
  Tensor out = empty_loom(shape, data.scalar_type());
  if (out.numel() == 0) return out;
  Tensor data3 = data.contiguous().view({g.rows, g.along, g.inner});
  EngineLock lock(engine_mutex());
  const DType acc = acc_of(to_loom(data.scalar_type()));
  NodeRef v = segment_values(dense(data3, g, acc), k, initial, acc);
  assign(out.view({g.rows, g.count, 1, g.inner}), v);
  return out;
}

Tensor segment_reduce_backward(const Tensor& grad, const Tensor& output, const Tensor& data,
                               c10::string_view reduce, const OptTensor& lengths,
                               const OptTensor& offsets, int64_t axis, const OptScalar& initial) {
  check_operands("_segment_reduce_backward", {grad, output, data});
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(has(lengths) || has(offsets),
              "segment_reduce(): Either lengths or offsets must be defined.");
  const Kind k = kind_of(reduce);
  const bool by_offsets = has(offsets);
  check_dtype(data);
  Segments g = read_segments(data, axis, by_offsets ? *offsets : *lengths, by_offsets);
  Tensor gi = empty_loom(data.sizes(), grad.scalar_type());
  if (gi.numel() == 0) return gi;
  // Each data element's segment (or -1 outside every segment) and position in it.
  std::vector<int64_t> seg(size_t(g.rows * g.along), -1), pos(size_t(g.rows * g.along), 0);
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t s = 0; s < g.count; ++s)
      for (int64_t j = 0; j < g.len[size_t(r * g.count + s)]; ++j) {
        const size_t e = size_t(r * g.along + g.start[size_t(r * g.count + s)] + j);
        seg[e] = s;
        pos[e] = j;
      }
  Tensor data3 = data.contiguous().view({g.rows, g.along, g.inner});
  Tensor grad3 = grad.contiguous().view({g.rows, g.count, g.inner});
  Tensor out3 = output.contiguous().view({g.rows, g.count, g.inner});
  const DType t = to_loom(grad.scalar_type()), acc = acc_of(t);
  // Per-segment helpers computed in the dense layout, kept in temporaries.
  Tensor counter, exclusive;
  EngineLock lock(engine_mutex());
  Dense d = dense(data3, g, acc);
  Shape es{g.rows, g.along, g.inner};
  IndexMap per_along{{0, 0}, {0, 1, -1}, {1, 1, 0}};
  NodeRef s = reindex(index_value(loom_tensor_of(seg, {g.rows, g.along}), {g.rows, g.along}), es, per_along);
  NodeRef in_seg = binary(Op::Ge, s, int_const(0, es));
  NodeRef sc = where(in_seg, s, int_const(0, es));
  NodeRef row = iota(DType::Int64, es, 0), col = iota(DType::Int64, es, 2);
  auto at_segment = [&](const Tensor& t3) {  // t3 (rows, count, inner) at each element
    return cast(gather(buffer_of(t3), to_loom(t3.scalar_type()), storage_index(t3, {row, sc, col})), acc);
  };
  NodeRef gv = at_segment(grad3), y = at_segment(out3);
  NodeRef x = cast(read_tensor(data3), acc);
  NodeRef value;
  if (k == Kind::Sum) {
    value = gv;
  } else if (k == Kind::Mean) {
    std::vector<int64_t> n(size_t(g.rows * g.along), 1);
    for (int64_t r = 0; r < g.rows; ++r)
      for (int64_t j = 0; j < g.along; ++j)
        if (seg[size_t(r * g.along + j)] >= 0)
          n[size_t(r * g.along + j)] = g.len[size_t(r * g.count + seg[size_t(r * g.along + j)])];
    value = gv / cast(reindex(index_value(loom_tensor_of(n, {g.rows, g.along}), {g.rows, g.along}), es,
                              per_along), acc);
  } else if (k == Kind::Max || k == Kind::Min) {
    // The gradient goes to every element equal to the result (or NaN); with two or more,
    // a positive gradient is shared among them (a negative one is not, as on the CPU).
    Shape r{g.rows, g.count, 1, g.inner};
    IndexMap bcast{{0, 0, 0}, {0, 1, -1, 2}, {1, 1, 0, 1}};
    NodeRef yd = cast(reindex(read_tensor(out3), d.shape, bcast), acc);
    NodeRef hit_d = binary(Op::LogicalAnd, d.valid,
                           binary(Op::LogicalOr, unary(Op::IsNan, d.value), binary(Op::Eq, d.value, yd)));
    counter = empty_loom({g.rows, g.count, g.inner}, at::kLong);
    assign(counter.view({g.rows, g.count, 1, g.inner}),
           loom::reduce(ReduceKind::Sum, cast(hit_d, DType::Int64), {2}, DType::Int64));
    NodeRef c = at_segment(counter);
    NodeRef hit = binary(Op::LogicalOr, unary(Op::IsNan, x), binary(Op::Eq, x, y));
    NodeRef share = binary(Op::LogicalAnd, binary(Op::Ge, c, scalar(2.0, acc, es)),
                           binary(Op::Gt, gv, scalar(0.0, acc, es)));
    value = where(hit, where(share, gv / c, gv), scalar(0.0, acc, es));
  } else {  // Prod
    // The product of the other elements, for a zero or NaN element: its segment's prefix
    // before it and suffix after it (the initial value first), else grad * output / x.
    Shape ds = d.shape;
    const int64_t L = ds[2];
    NodeRef v = where(d.valid, d.value, scalar(1.0, acc, ds));
    // Inclusive products from the front and (of the reversed segment) from the back.
    IndexMap flip{{0, 0, L - 1, 0}, {0, 1, 2, 3}, {1, 1, -1, 1}};
    Tensor front = empty_loom(ds, to_aten(acc)), back = empty_loom(ds, to_aten(acc));
    write_tensor(front, scan(ReduceKind::Prod, v, 2));
    write_tensor(back, scan(ReduceKind::Prod, reindex(v, ds, flip), 2));
    NodeRef l = iota(DType::Int64, ds, 2);
    NodeRef r0 = iota(DType::Int64, ds, 0), r1 = iota(DType::Int64, ds, 1), r3 = iota(DType::Int64, ds, 3);
    auto product_at = [&](const Tensor& t4, const NodeRef& at, const NodeRef& none) {
      NodeRef safe = where(none, int_const(0, ds), at);  // never read outside the storage
      NodeRef p = gather(buffer_of(t4), acc, storage_index(t4, {r0, r1, safe, r3}));
      return where(none, scalar(1.0, acc, ds), p);
    };
    NodeRef lo = product_at(front, l - int_const(1, ds), binary(Op::Eq, l, int_const(0, ds)));
    NodeRef hi = product_at(back, int_const(L - 2, ds) - l, binary(Op::Eq, l, int_const(L - 1, ds)));
    exclusive = empty_loom(ds, to_aten(acc));
    assign(exclusive, initial_value(initial, Kind::Prod, acc, ds) * lo * hi);
    NodeRef p = reindex(index_value(loom_tensor_of(pos, {g.rows, g.along}), {g.rows, g.along}), es, per_along);
    NodeRef ex = cast(gather(buffer_of(exclusive), acc, storage_index(exclusive, {row, sc, p, col})), acc);
    NodeRef zero = binary(Op::LogicalOr, unary(Op::IsNan, x), binary(Op::Eq, x, scalar(0.0, acc, es)));
    value = where(zero, gv * ex, (gv * y) / x);
  }
  assign(gi.view({g.rows, g.along, g.inner}), where(in_seg, value, scalar(0.0, acc, es)));
  return gi;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward));
}

}  // namespace loom::aten
