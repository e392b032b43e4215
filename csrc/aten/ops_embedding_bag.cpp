// embedding_bag on Loom: the sum, mean or max of each bag's embedding rows, its backward
// and the per-sample weights' gradient; and embedding's max_norm renormalization. Bags are ranges of the indices given by offsets,
// which are read on the host as the CPU reads them (its checks read them too); the rows
// are gathered and combined in kernels, each index checked with the CPU's message.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <ATen/ops/_embedding_bag_backward_native.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>

#include "aten/pointwise.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using namespace expr;
using OptTensor = c10::optional<Tensor>;
constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

// The bags, from offsets on the host: bag_of[i] is index i's bag as the CPU's offset2bag
// has it (a prefix count of offsets, so that past the last offset it is `count`).
struct Bags {
  int64_t n = 0, count = 0;
  std::vector<int64_t> offsets, bag_of, size;  // size: the CPU's bag_size before padding
};

Bags read_bags(const Tensor& offsets, int64_t n, bool include_last_offset) {
  Bags b;
  b.n = n;
  Tensor host = offsets.to(at::kLong).cpu().contiguous();
  b.offsets.assign(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
  b.count = int64_t(b.offsets.size()) - (include_last_offset ? 1 : 0);
  std::vector<int64_t> marks(size_t(n + 1), 0);
  for (int64_t o : b.offsets) {
    TORCH_CHECK(o >= 0 && o <= n, "index out of range in self");
    marks[size_t(o)]++;
  }
  marks[0]--;
  int64_t bag = 0;
  for (int64_t i = 0; i < n; ++i) b.bag_of.push_back(bag += marks[size_t(i)]);
  for (int64_t k = 0; k < b.count; ++k)
    b.size.push_back(k + 1 < b.count ? b.offsets[size_t(k + 1)] - b.offsets[size_t(k)]
                                     : n - b.offsets[size_t(k)]);
  return b;
}

// Whether the running torch's CPU sums bags of rows of dtype t on its fast path, which
// leaves offset2bag empty (float and float16; 2.x: bfloat16 too): one sum decides.
bool cpu_sums_fast(c10::ScalarType t) {
  static std::array<std::atomic<int>, size_t(c10::ScalarType::NumOptions)> known{};
  std::atomic<int>& k = known[size_t(t)];
  if (k.load() == 0) {
    const Tensor i = at::zeros({1}, at::kLong);
    auto r = at::_embedding_bag(probe_operand(t, {1, 1}), i, i);
    k.store(std::get<1>(r).numel() == 0 ? 1 : 2);
  }
  return k.load() == 1;
}

void check_arguments(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                     int64_t mode, const OptTensor& psw, bool include_last_offset) {
  at::TensorArg indices_arg(indices, "indices", 1), offsets_arg(offsets, "offsets", 1),
      weight_arg(weight, "weight", 1);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkSameType("embedding_bag", indices_arg, offsets_arg);
  // The weight dtypes the running torch's CPU takes (2.x: bfloat16 too).
  static const CpuVerdicts verdicts;
  verdicts.check(weight.scalar_type(), [&] {
    const Tensor i = at::zeros({1}, at::kLong);
    at::_embedding_bag(probe_operand(weight.scalar_type(), {1, 1}), i, i);
  });
  if (offsets.numel() > 0) {
    Tensor ends = offsets.narrow(0, 0, 1).cpu(), last = offsets.narrow(0, offsets.size(0) - 1, 1).cpu();
    TORCH_CHECK(ends.item<int64_t>() == 0, "offsets[0] has to be 0, i.e., the first sequence "
                "in the mini-batch has to start from position 0. However, got ", ends.item<int64_t>());
    TORCH_CHECK(last.item<int64_t>() <= indices.size(0), "offsets[-1] can not be greater than "
                "input's length ", indices.size(0), " but got offsets[-1] of ", last.item<int64_t>());
  }
  if (has(psw)) {
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    at::checkSameType("embedding_bag", weight_arg, at::TensorArg(*psw, "per_sample_weights", 1));
    TORCH_CHECK(psw->dim() == 1);
    TORCH_CHECK(psw->numel() == indices.numel());
  }
  if (include_last_offset)
    TORCH_CHECK(offsets.size(0) >= 1, "include_last_offset: number of offset should be at least 1");
}

// Each index, checked against the table's rows with the CPU's message.
NodeRef checked_indices(const Tensor& indices, int64_t rows) {
  const std::string msg =
      "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {}";
  return checked_now(indices, index_value(indices, {indices.numel()}), rows, false, false, msg);
}

// Row `row` (Int64 values of any shape s) of a 2-d tensor at column iota along `col_axis`.
NodeRef row_elements(const Tensor& t, const NodeRef& row, int col_axis) {
  return gather(buffer_of(t), to_loom(t.scalar_type()),
                storage_index(t, {row, iota(DType::Int64, row->shape, col_axis)}));
}

// The sum of each bag's rows (scaled by the per-sample weights), padding excluded.
void sum_bags(const Tensor& out, const Tensor& weight, const NodeRef& k, const Bags& b,
              const OptTensor& psw, int64_t padding_idx) {
  const int64_t n = b.n, d = weight.size(1);
  const DType t = to_loom(weight.scalar_type()), acc = acc_of(t);
  // Padded indices, and those past the last bag, add into a spare row that is dropped.
  Tensor sums = empty_loom({b.count + 1, d}, to_aten(acc));
  assign(sums, constant(loom::Scalar::of_int(0), acc, {b.count + 1, d}));
  Shape rows{n, d};
  IndexMap by_row{{0}, {0, -1}, {1, 0}};
  NodeRef kr = reindex(k, rows, by_row);
  NodeRef v = cast(row_elements(weight, kr, 1), acc);
  if (has(psw)) v = v * reindex(cast(read_tensor(*psw), acc), rows, by_row);
  NodeRef bag = reindex(index_value(loom_tensor_of(b.bag_of, {n}), {n}), rows, by_row);
  NodeRef spare = int_const(b.count, rows);
  bag = where(binary(Op::Ge, bag, spare), spare, bag);
  bag = where(binary(Op::Eq, kr, int_const(padding_idx, rows)), spare, bag);
  scatter(buffer_of(sums), acc, storage_index(sums, {bag, iota(DType::Int64, rows, 1)}), v,
          ReduceKind::Sum);
  assign(out, read_tensor(sums.narrow(0, 0, b.count)));
}

// The CPU's max of a bag: its first row, then each later row's element where strictly
// greater. So a NaN first stays, a NaN later is passed over, and ties keep the first.
void max_bags(const Tensor& out, const Tensor& max_indices, const Tensor& weight,
              const Tensor& indices, const NodeRef& k, const Bags& b, int64_t padding_idx) {
  const int64_t d = weight.size(1);
  int64_t longest = 0;
  for (int64_t s : b.size) longest = std::max(longest, s);
  const DType t = to_loom(weight.scalar_type());
  if (b.n == 0 || longest == 0) {
    assign(out, constant(loom::Scalar::of_int(0), t, {b.count, d}));
    assign(max_indices, int_const(0, {b.count, d}));
    return;
  }
  std::vector<int64_t> starts(b.offsets.begin(), b.offsets.begin() + b.count);
  Shape bl{b.count, longest}, bld{b.count, longest, d};
  IndexMap per_bag{{0}, {0, -1}, {1, 0}};
  NodeRef start = reindex(index_value(loom_tensor_of(starts, {b.count}), {b.count}), bl, per_bag);
  NodeRef len = reindex(index_value(loom_tensor_of(b.size, {b.count}), {b.count}), bl, per_bag);
  NodeRef l = iota(DType::Int64, bl, 1);
  NodeRef in_bag = binary(Op::Lt, l, len);
  NodeRef pos = where(in_bag, start + l, int_const(0, bl));
  // The index at each position (checked once per index, as k is).
  Tensor kt = empty_loom({b.n}, at::kLong);
  assign(kt, k);
  NodeRef idx = gather(buffer_of(kt), DType::Int64, pos);
  NodeRef valid = binary(Op::LogicalAnd, in_bag, binary(Op::Ne, idx, int_const(padding_idx, bl)));
  IndexMap along_d{{0, 0}, {0, 1, -1}, {1, 1, 0}};
  NodeRef v = row_elements(weight, reindex(idx, bld, along_d), 2);
  NodeRef valid_d = reindex(valid, bld, along_d);
  NodeRef any = reduce(ReduceKind::Any, valid, {1}, DType::Bool);  // (B, 1)
  NodeRef first = reduce(ReduceKind::ArgMax, cast(valid, DType::Int32), {1}, DType::Int64);
  auto at_l = [&](const NodeRef& which, const Shape& s, const NodeRef& ints) {  // ints[b, which]
    IndexMap m{{0, 0}, {0, 1}, {1, 0}};
    if (s.size() == 3) m = IndexMap{{0, 0, 0}, {0, -1, 2}, {1, 0, 1}};
    NodeRef hit = binary(Op::Eq, iota(DType::Int64, s, 1), reindex(which, s, m));
    return reduce(ReduceKind::Sum, where(hit, ints, int_const(0, s)), {1}, DType::Int64);
  };
  NodeRef first_idx = at_l(first, bl, idx);  // (B, 1)
  Shape b1d{b.count, 1, d};
  IndexMap keep_bag{{0, 0}, {0, 1, -1}, {1, 1, 0}};
  NodeRef vf = row_elements(weight, reindex(first_idx, b1d, keep_bag), 2);  // (B, 1, D)
  NodeRef real = binary(Op::LogicalAnd, valid_d, unary(Op::LogicalNot, unary(Op::IsNan, v)));
  NodeRef key = where(real, v, constant(loom::Scalar::of_float(-INFINITY), t, bld));
  NodeRef m = reduce(ReduceKind::Max, key, {1}, t);  // (B, 1, D)
  IndexMap bcast{{0, 0, 0}, {0, -1, 2}, {1, 0, 1}};
  NodeRef top = binary(Op::LogicalAnd, real, binary(Op::Eq, v, reindex(m, bld, bcast)));
  NodeRef h = reduce(ReduceKind::ArgMax, cast(top, DType::Int32), {1}, DType::Int64);
  NodeRef top_idx = at_l(h, bld, reindex(idx, bld, along_d));  // (B, 1, D)
  NodeRef any_d = reindex(any, b1d, IndexMap{{0, 0}, {0, 1, -1}, {1, 1, 0}});
  NodeRef nan_first = unary(Op::IsNan, vf);
  NodeRef first_d = reindex(first_idx, b1d, keep_bag);
  NodeRef value = where(any_d, where(nan_first, vf, m), constant(loom::Scalar::of_int(0), t, b1d));
  NodeRef which = where(any_d, where(nan_first, first_d, top_idx), int_const(0, b1d));
  IndexMap drop{{0, 0, 0}, {0, 2}, {1, 1}};
  assign(out, reindex(value, {b.count, d}, drop));
  assign(max_indices, reindex(which, {b.count, d}, drop));
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_impl(
    const Tensor& weight, const Tensor& indices_, const Tensor& offsets_, int64_t mode,
    const OptTensor& psw, bool include_last_offset, int64_t padding_idx, bool requires_grad) {
  check_operands("_embedding_bag", {weight, indices_, offsets_});
  const auto common = at::promoteTypes(offsets_.scalar_type(), indices_.scalar_type());
  Tensor indices = indices_.to(common), offsets = offsets_.to(common);
  check_arguments(weight, indices, offsets, mode, psw, include_last_offset);
  const int64_t n = indices.size(0), d = weight.size(1), rows = weight.size(0);
  Bags b = read_bags(offsets, n, include_last_offset);
  const auto it = offsets.scalar_type();
  Tensor out = empty_loom({b.count, d}, weight.scalar_type());
  // The CPU's sum of float rows without padding (its fast path) leaves offset2bag empty.
  const bool fast_sum = mode == kSum && padding_idx < 0 && cpu_sums_fast(weight.scalar_type()) &&
                        weight.stride(1) == 1 && (!has(psw) || psw->stride(0) == 1);
  Tensor offset2bag = fast_sum ? empty_loom({0}, it) : loom_tensor_of(b.bag_of, {n}, it);
  const bool sized = requires_grad || mode != kSum;
  Tensor bag_size = sized ? loom_tensor_of(b.size, {b.count}, it) : empty_loom(offsets.sizes(), it);
  Tensor max_indices;
  EngineLock g(engine_mutex());
  NodeRef k = checked_indices(indices, rows);
  if (sized && padding_idx >= 0 && n > 0) {  // padded indices do not count
    std::vector<int64_t> bag = b.bag_of;
    for (int64_t& x : bag) x = std::min(x, b.count);
    NodeRef pad = binary(Op::Eq, k, int_const(padding_idx, {n}));
    NodeRef at = where(pad, index_value(loom_tensor_of(bag, {n}), {n}), int_const(b.count, {n}));
    Tensor counts = empty_loom({b.count + 1}, at::kLong);
    assign(counts, int_const(0, {b.count + 1}));
    scatter(buffer_of(counts), DType::Int64, at, int_const(1, {n}), ReduceKind::Sum);
    assign(bag_size, read_tensor(bag_size) - cast(read_tensor(counts.narrow(0, 0, b.count)),
                                                  to_loom(it)));
  }
  if (mode == kMax) {
    max_indices = empty_loom({b.count, d}, it);
    max_bags(out, max_indices, weight, indices, k, b, padding_idx);
    return {out, offset2bag, bag_size, max_indices};
  }
  if (b.count > 0 && d > 0) {
    if (n > 0) {
      sum_bags(out, weight, k, b, psw, padding_idx);
    } else {
      assign(out, constant(loom::Scalar::of_int(0), to_loom(weight.scalar_type()), {b.count, d}));
    }
    if (mode == kMean) {
      const DType acc = acc_of(to_loom(weight.scalar_type()));
      NodeRef size = cast(read_tensor(bag_size), acc);
      size = binary(Op::Maximum, size, constant(loom::Scalar::of_int(1), acc, size->shape));
      IndexMap per_row{{0}, {0, -1}, {1, 0}};
      assign(out, cast(read_tensor(out), acc) / reindex(size, {b.count, d}, per_row));
    }
  }
  if (mode == kSum) assign(bag_size, int_const(0, shape_of(bag_size.sizes())));
  max_indices = empty_loom(bag_size.sizes(), it);
  assign(max_indices, read_tensor(bag_size));
  return {out, offset2bag, bag_size, max_indices};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_forward_only(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool, int64_t mode, bool,
    const OptTensor& psw, bool include_last_offset, int64_t padding_idx) {
  return embedding_bag_impl(weight, indices, offsets, mode, psw, include_last_offset, padding_idx,
                            false);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_fn(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool, int64_t mode, bool,
    const OptTensor& psw, bool include_last_offset, int64_t padding_idx) {
  return embedding_bag_impl(weight, indices, offsets, mode, psw, include_last_offset, padding_idx,
                            true);
}

// The CPU's scale of each index's gradient with scale_grad_by_freq: it visits the sorted
// indices in groups of equal values and divides by the count of the value at the group's
// number as a position in the sorted indices (not of the group's own value).
std::vector<double> frequency_scales(const Tensor& indices, int64_t num_weights) {
  Tensor host = indices.to(at::kLong).cpu().contiguous();
  const int64_t n = host.numel();
  const int64_t* p = host.data_ptr<int64_t>();
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return p[a] < p[c]; });
  std::vector<int64_t> counts(size_t(std::max<int64_t>(num_weights, 0)), 0);
  for (int64_t i = 0; i < n; ++i)
    if (p[i] >= 0 && p[i] < num_weights) counts[size_t(p[i])]++;
  std::vector<double> scale(size_t(n), 1.0);
  int64_t group = -1;
  for (int64_t j = 0; j < n; ++j) {
    if (j == 0 || p[order[size_t(j)]] != p[order[size_t(j - 1)]]) ++group;
    const int64_t v = p[order[size_t(group)]];
    if (v >= 0 && v < num_weights && counts[size_t(v)] > 0)
      scale[size_t(order[size_t(j)])] = 1.0 / double(counts[size_t(v)]);
  }
  return scale;
}

Tensor embedding_bag_dense_backward(const Tensor& grad_, const Tensor& indices,
                                    const Tensor& offset2bag, const Tensor& bag_size,
                                    const Tensor& max_indices, int64_t num_weights,
                                    bool scale_grad_by_freq, int64_t mode, const OptTensor& psw,
                                    int64_t padding_idx) {
  check_operands("_embedding_bag_dense_backward", {grad_, indices, offset2bag, bag_size});
  static const CpuVerdicts verdicts;  // 2.x's CPU takes bfloat16 too
  verdicts.check(grad_.scalar_type(), [&] {
    const Tensor i = at::zeros({1}, at::kLong);
    at::_embedding_bag_dense_backward(probe_operand(grad_.scalar_type(), {1, 1}), i, i,
                                      i, i, 1, false, 0, {}, -1);
  });
  const int64_t d = grad_.size(1), n = indices.numel();
  Tensor grad = grad_.contiguous();
  Tensor out = empty_loom({num_weights, d}, grad.scalar_type());
  const DType t = to_loom(grad.scalar_type());
  std::vector<double> freq = scale_grad_by_freq && mode != kMax ? frequency_scales(indices, num_weights)
                                                                : std::vector<double>();
  Tensor freq_t = freq.empty() ? Tensor() : at::tensor(freq, at::kDouble).to(c10::Device(kLoomDeviceType, 0));
  EngineLock g(engine_mutex());
  assign(out, constant(loom::Scalar::of_int(0), t, {num_weights, d}));
  if (d == 0) return out;
  const std::string msg = "index out of range in self";
  if (mode == kMax) {
    const int64_t bags = max_indices.size(0);
    if (bags == 0) return out;
    Shape s{bags, d};
    NodeRef k = checked(cast(read_tensor(max_indices), DType::Int64), num_weights, false, false, msg);
    NodeRef empty = binary(Op::Eq, reindex(cast(read_tensor(bag_size), DType::Int64), s,
                                           IndexMap{{0}, {0, -1}, {1, 0}}), int_const(0, s));
    NodeRef v = where(empty, constant(loom::Scalar::of_int(0), t, s), read_tensor(grad));
    scatter(buffer_of(out), t, storage_index(out, {k, iota(DType::Int64, s, 1)}), v, ReduceKind::Sum);
    return out;
  }
  if (n == 0) return out;
  Shape rows{n, d};
  IndexMap by_row{{0}, {0, -1}, {1, 0}};
  NodeRef k = checked(index_value(indices, {n}), num_weights, false, false, msg);
  NodeRef bag = index_value(offset2bag, {n});
  // The CPU's scale per index, in double, rounded to the gradient's dtype once.
  NodeRef scale = scalar(1.0, DType::Float64, {n});
  if (has(psw)) scale = scale * cast(read_tensor(*psw), DType::Float64);
  if (freq_t.defined()) scale = scale * read_tensor(freq_t);
  if (mode == kMean) {
    NodeRef size = cast(gather(buffer_of(bag_size), to_loom(bag_size.scalar_type()),
                               storage_index(bag_size, {bag})), DType::Float64);
    NodeRef zero = binary(Op::Eq, size, scalar(0.0, DType::Float64, {n}));
    scale = where(zero, scale, scale / size);
  }
  NodeRef v = row_elements(grad, reindex(bag, rows, by_row), 1) *
              reindex(cast(scale, t), rows, by_row);
  NodeRef kr = reindex(k, rows, by_row);
  v = where(binary(Op::Eq, kr, int_const(padding_idx, rows)), constant(loom::Scalar::of_int(0), t, rows), v);
  scatter(buffer_of(out), t, storage_index(out, {kr, iota(DType::Int64, rows, 1)}), v, ReduceKind::Sum);
  return out;
}

Tensor embedding_bag_per_sample_weights_backward(const Tensor& grad, const Tensor& weight,
                                                 const Tensor& indices_, const Tensor& offsets_,
                                                 const Tensor& offset2bag, int64_t mode,
                                                 int64_t padding_idx) {
  check_operands("_embedding_bag_per_sample_weights_backward", {grad, weight, indices_, offsets_});
  TORCH_CHECK(mode == kSum,
              "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  const auto common = at::promoteTypes(offsets_.scalar_type(), indices_.scalar_type());
  Tensor indices = indices_.to(common);
  at::checkScalarTypes("embedding_bag", at::TensorArg(indices, "indices", 1), {at::kLong, at::kInt});
  const int64_t n = indices.size(0), d = grad.size(1);
  Tensor bags = offset2bag;
  if (n != 0 && offset2bag.numel() == 0)
    bags = loom_tensor_of(read_bags(offsets_, n, false).bag_of, {n}, common);
  Tensor out = empty_loom({n}, grad.scalar_type());
  EngineLock g(engine_mutex());
  const DType t = to_loom(grad.scalar_type()), acc = acc_of(t);
  if (n == 0) return out;
  Shape rows{n, d};
  IndexMap by_row{{0}, {0, -1}, {1, 0}};
  NodeRef k = checked_indices(indices, weight.size(0));
  NodeRef bag = index_value(bags, {n});
  NodeRef prod = cast(row_elements(grad, reindex(bag, rows, by_row), 1), acc) *
                 cast(row_elements(weight, reindex(k, rows, by_row), 1), acc);
  NodeRef dot = reindex(reduce(ReduceKind::Sum, prod, {1}, acc), {n}, IndexMap{{0, 0}, {0}, {1}});
  NodeRef pad = binary(Op::Eq, k, int_const(padding_idx, {n}));
  assign(out, where(pad, constant(loom::Scalar::of_int(0), acc, {n}), dot));
  return out;
}

// embedding(max_norm=): each row that some index names, with a norm above max_norm, is
// scaled by max_norm / (norm + 1e-7), as the CPU does row by row; here one pass over the
// table, the rows chosen by a scatter of flags.
Tensor& embedding_renorm(Tensor& self, const Tensor& indices, double max_norm, double norm_type) {
  check_operands("embedding_renorm_", {self, indices});
  at::checkDim("embedding_renorm_", at::TensorArg(self, "self", 1), 2);
  at::checkScalarTypes("embedding_renorm_", at::TensorArg(indices, "indices", 2),
                       {at::kLong, at::kInt});
  const int64_t rows = self.size(0), n = indices.numel();
  if (n == 0 || self.numel() == 0) return self;
  Tensor norms = at::linalg_vector_norm(self, norm_type, {1}, false, c10::nullopt);
  EngineLock g(engine_mutex());
  const std::string msg = bounds_message(0, rows);
  Tensor flat = indices.reshape({n});
  NodeRef k = checked_now(flat, index_value(flat, {n}), rows, true, true, msg);
  k = where(binary(Op::Lt, k, int_const(0, {n})), k + int_const(rows, {n}), k);
  Tensor named = empty_loom({rows}, at::kBool);
  assign(named, constant(loom::Scalar::of_int(0), DType::Bool, {rows}));
  scatter(buffer_of(named), DType::Bool, k, constant(loom::Scalar::of_int(1), DType::Bool, {n}),
          std::nullopt);
  const DType t = to_loom(self.scalar_type());
  NodeRef norm = cast(read_tensor(norms), DType::Float64);
  NodeRef over = binary(Op::LogicalAnd, read_tensor(named),
                        binary(Op::Gt, norm, scalar(max_norm, DType::Float64, {rows})));
  NodeRef scale = cast(scalar(max_norm, DType::Float64, {rows}) / (norm + 1e-7), t);
  Shape s = shape_of(self.sizes());
  IndexMap per_row{{0}, {0, -1}, {1, 0}};
  NodeRef x = read_tensor(self);
  assign(self, where(reindex(over, s, per_row), x * reindex(scale, s, per_row), x));
  return self;
}

// 2.x gives _embedding_bag_backward a CPU kernel where 1.13 composes it of the dense and
// sparse backward (rebuilding offset2bag where the forward left it empty); that kernel is
// device-generic code, registered only where it is no composite.
#if LOOM_TORCH_AT_LEAST(2, 0)
constexpr auto embedding_bag_backward = at::native::_embedding_bag_backward_symint;
#else
constexpr auto embedding_bag_backward = at::native::_embedding_bag_backward;
#endif

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  if (!composite_in_this_release("_embedding_bag_backward"))
    m.impl("_embedding_bag_backward", embedding_bag_backward);
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag_forward_only));
  m.impl("_embedding_bag", TORCH_FN(embedding_bag_fn));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward",
         TORCH_FN(embedding_bag_per_sample_weights_backward));
}

}  // namespace loom::aten
