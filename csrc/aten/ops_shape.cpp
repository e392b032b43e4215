// Ops that move values between positions: flip, roll, tril/triu, diag, cat (and stack,
// which PyTorch builds on cat), trace, narrow_copy.out, pixel_(un)shuffle. Each checks its
// arguments and finds its result layout as the CPU does, then builds the value lazily from
// strided loads, reindexes and iota conditions; nothing is realized or runs on the CPU.
//
// NOTE [Pieces, not selects]: a Where evaluates both branches at every element (the C
// renderer emits each operand as a statement before the select), and a Load's index is
// affine in the store's coordinates. A value may therefore read an input only through a
// map that stays inside the input over the *whole* index space of its store. A result
// assembled from disjoint pieces (cat of unequal sizes, roll, diag of a vector off the
// main diagonal) is written piece by piece, one Store per sub-view of the result, each
// reading in range. Where splitting one dim makes every piece span the whole index space
// (cat of equal sizes, which is what stack does), one Store of a where-chain over the
// split view writes them all, and a consumer reading through stack's view fuses with it.
#include <ATen/MetaFunctions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/pixel_shuffle_native.h>
#include <ATen/ops/pixel_unshuffle_native.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

DType dtype_of(const Tensor& t) { return to_loom(t.scalar_type()); }
NodeRef ci(int64_t v, DType t, const Shape& s) { return constant(Scalar::of_int(v), t, s); }

// The part of `v` at [start, start + len) along dim d.
View narrowed(View v, int64_t d, int64_t start, int64_t len) {
  v.offset += start * v.strides[d];
  v.sizes[d] = len;
  return v;
}

void check_loom(const char* op, const Tensor& t) {
  TORCH_CHECK(is_loom(t),
              "Expected all tensors to be on the same device, but found at least "
              "two devices, ",
              t.device(), " and privateuseone:0! (when checking argument for ", op, ")");
}

// --- flip: a reindex with coordinate n-1-i along each flipped dim ---

Tensor flip_fn(const Tensor& self, at::IntArrayRef dims) {
  auto flipped = at::dim_list_to_bitset(dims, self.dim());  // CPU's wrapping and checks
  Tensor meta = at::empty_like(to_meta(self), at::MemoryFormat::Preserve);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  Shape s = shape_of(self.sizes());
  IndexMap m{Shape(s.size(), 0), {}, {}};
  for (size_t d = 0; d < s.size(); ++d) {
    bool rev = flipped[d] && s[d] > 1;
    m.offs[d] = rev ? s[d] - 1 : 0;
    m.dim_of.push_back(int(d));
    m.mult.push_back(rev ? -1 : 1);
  }
  assign(out, reindex(read_tensor(self), s, std::move(m)));
  return out;
}

// --- roll ---

// roll on meta tensors, step by step as CPU's roll_cpu and roll_common do it: their checks,
// and the layout of the cat (or clone) that the last single-dim step ends in.
Tensor roll_meta(const Tensor& x, at::IntArrayRef shifts, at::IntArrayRef dims) {
  if (dims.size() != 1 || shifts.size() != 1) {
    TORCH_CHECK(!shifts.empty(), "`shifts` required");
    if (dims.empty() && shifts.size() == 1)  // flattened: a contiguous 1-d roll, viewed back
      return at::empty({x.numel()}, x.options()).view(x.sizes());
    TORCH_CHECK(shifts.size() == dims.size(),
                "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:", dims.size());
    return roll_meta(roll_meta(x, shifts[0], dims[0]), shifts.slice(1), dims.slice(1));
  }
  if (x.numel() == 0) return at::empty_like(x, at::MemoryFormat::Preserve);
  int64_t size = x.size(dims[0]);
  int64_t start = (size - shifts[0]) % size;
  if (start < 0) start += size;
  return at::cat({x.narrow(dims[0], start, size - start), x.narrow(dims[0], 0, start)}, dims[0]);
}

// Writes src rolled by (dim, shift in [1, size)) pairs into out: one piece per choice of
// half along each rolled dim, so every piece reads and writes in range.
void write_rolled(const Tensor& src, const View& sv, const Tensor& out, const View& ov,
                  const std::vector<std::pair<int64_t, int64_t>>& rolls) {
  DType t = dtype_of(out);
  std::vector<std::pair<View, NodeRef>> pieces;
  for (int64_t mask = 0; mask < (int64_t(1) << rolls.size()); ++mask) {
    View from = sv, to = ov;
    for (size_t r = 0; r < rolls.size(); ++r) {
      auto [d, s] = rolls[r];
      int64_t n = sv.sizes[d];
      bool wrapped = (mask >> r) & 1;  // the last s elements, which move to the front
      from = wrapped ? narrowed(from, d, n - s, s) : narrowed(from, d, 0, n - s);
      to = wrapped ? narrowed(to, d, 0, s) : narrowed(to, d, s, n - s);
    }
    pieces.emplace_back(to, loom::read(buffer_of(src), t, from));
  }
  for (auto& [to, value] : pieces) loom::write(buffer_of(out), t, to, value);
}

Tensor roll_fn(const Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  Tensor meta = roll_meta(to_meta(self), shifts, dims);
  // The CPU clones an empty input, flattened or not (2.x's meta empty_like lays an empty
  // tensor out contiguously, whatever its strides); flattened, the clone is contiguous.
  if (self.numel() == 0)
    return dims.empty() ? result_like(meta) : self.clone(at::MemoryFormat::Preserve);
  // Flattened, the roll runs over the row-major order of a contiguous copy (lazy too).
  Tensor src = dims.empty() ? self.contiguous() : self;
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  View sv = view_of(src), ov = view_of(out);
  if (dims.empty()) {
    sv = View{{self.numel()}, {1}, src.storage_offset()};
    ov = View{{self.numel()}, {1}, out.storage_offset()};  // contiguous, as on CPU
  }
  // The shift of each dim (a dim may repeat), in [0, size).
  std::vector<int64_t> total(sv.ndim(), 0);
  for (size_t k = 0; k < shifts.size(); ++k) {
    int64_t d = dims.empty() ? 0 : at::maybe_wrap_dim(dims[k], self.dim());
    int64_t n = sv.sizes[d];
    total[d] = ((total[d] + shifts[k] % n) % n + n) % n;
  }
  std::vector<std::pair<int64_t, int64_t>> rolls;
  for (size_t d = 0; d < total.size(); ++d)
    if (total[d] != 0) rolls.emplace_back(int64_t(d), total[d]);
  write_rolled(src, sv, out, ov, rolls);
  return out;
}

// --- tril / triu: where(column - row <=|>= k, x, 0) ---

NodeRef tri_value(const Tensor& self, int64_t k, bool upper) {
  Shape s = shape_of(self.sizes());
  int col = int(s.size()) - 1;
  NodeRef above = binary(Op::Sub, iota(DType::Int64, s, col), iota(DType::Int64, s, col - 1));
  NodeRef keep = binary(upper ? Op::Ge : Op::Le, above, ci(k, DType::Int64, s));
  NodeRef x = read_tensor(self);
  return where(keep, x, ci(0, x->dtype, s));
}

// CPU's kernels index the last two dims of any non-empty input (an IndexError below 2-d);
// its meta functions check nothing.
void check_tri(const Tensor& self) {
  if (self.numel() != 0) (void)self.size(-2);
}

template <bool kUpper>
Tensor tri_fn(const Tensor& self, int64_t k) {
  Tensor meta = kUpper ? at::meta::triu(to_meta(self), k) : at::meta::tril(to_meta(self), k);
  check_tri(self);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() != 0) assign(out, tri_value(self, k, kUpper));
  return out;
}

template <bool kUpper>
Tensor& tri_ip(Tensor& self, int64_t k) {
  Tensor m = to_meta(self);
  kUpper ? at::meta::triu_(m, k) : at::meta::tril_(m, k);
  check_tri(self);
  EngineLock g(engine_mutex());
  if (self.numel() != 0) assign(self, tri_value(self, k, kUpper));
  return self;
}

template <bool kUpper>
Tensor& tri_out(const Tensor& self, int64_t k, Tensor& out) {
  check_loom(kUpper ? "triu" : "tril", self);
  Tensor mo = to_meta(out);
  kUpper ? at::meta::triu_outf(to_meta(self), k, mo) : at::meta::tril_outf(to_meta(self), k, mo);
  check_tri(self);
  match_out(out, mo);
  EngineLock g(engine_mutex());
  if (out.numel() != 0) assign(out, tri_value(self, k, kUpper));
  return out;
}

// --- diag (CPU dispatches only diag.out; diag itself is composite over it) ---

Tensor& diag_out(const Tensor& self, int64_t k, Tensor& out) {
  check_loom("diag", self);
  check_loom("diag", out);
  TORCH_CHECK(self.dim() == 1 || self.dim() == 2, "matrix or a vector expected");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", out.scalar_type());
  if (self.dim() == 2) {
    int64_t rows = self.size(0), cols = self.size(1);
    int64_t sz = k >= 0 ? std::min(rows, cols - k) : std::min(rows + k, cols);
    TORCH_CHECK(sz >= 0, "diag(): offset ", k, " is out of range for a ", rows, "x", cols,
                " matrix");
    at::native::resize_output(out, {sz});
    EngineLock g(engine_mutex());
    if (sz > 0) assign(out, read_tensor(self.diagonal(k)));
    return out;
  }
  int64_t n = self.size(0), sz = n + std::abs(k);
  at::native::resize_output(out, {sz, sz});
  if (sz == 0) return out;
  EngineLock g(engine_mutex());
  Shape s = shape_of(out.sizes());
  NodeRef x = read_tensor(self);
  NodeRef zero = ci(0, x->dtype, s);
  if (k == 0) {  // x[row] is in range everywhere: one store
    NodeRef on = binary(Op::Eq, iota(DType::Int64, s, 0), iota(DType::Int64, s, 1));
    assign(out, where(on, reindex(x, s, IndexMap{{0}, {0, -1}, {1, 0}}), zero));
    return out;
  }
  assign(out, zero);
  if (n == 0) return out;
  View ov = view_of(out);
  View dv{{n},
          {ov.strides[0] + ov.strides[1]},
          ov.offset + (k > 0 ? k * ov.strides[1] : -k * ov.strides[0])};
  loom::write(buffer_of(out), x->dtype, dv, x);
  return out;
}

// --- diag_embed (torch 2.x's diag of a vector is composite over it) ---

// The last dim of self laid on the diagonal `offset` of dims (dim1, dim2) of a zero tensor.
// On the main diagonal one store: where(i == j, self[..., i], 0). Off it self[..., i] would
// be read past its end on the rows that hold no diagonal element, so the zeros are stored
// and then self through the diagonal's strides (one batched kernel, as diag's).
Tensor diag_embed_fn(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  check_operands("diag_embed", {self});
  Tensor meta = at::diag_embed(to_meta(self), offset, dim1, dim2);  // its checks and shape
  const int64_t n = meta.dim();
  dim1 = c10::maybe_wrap_dim(dim1, n);
  dim2 = c10::maybe_wrap_dim(dim2, n);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  Shape s = shape_of(out.sizes());
  NodeRef x = read_tensor(self);
  NodeRef zero = ci(0, x->dtype, s);
  if (offset == 0) {
    IndexMap map{Shape(self.dim(), 0), std::vector<int>(n, -1), Shape(n, 0)};
    for (int64_t j = 0, k = 0; j < n; ++j) {
      if (j == dim2) continue;
      map.dim_of[j] = j == dim1 ? int(self.dim() - 1) : int(k++);
      map.mult[j] = 1;
    }
    NodeRef on = binary(Op::Eq, iota(DType::Int64, s, int(dim1)), iota(DType::Int64, s, int(dim2)));
    assign(out, where(on, reindex(x, s, map), zero));
    return out;
  }
  assign(out, zero);
  if (self.numel() == 0) return out;
  View ov = view_of(out), dv{{}, {}, ov.offset};
  for (int64_t j = 0; j < n; ++j)
    if (j != dim1 && j != dim2) {
      dv.sizes.push_back(ov.sizes[j]);
      dv.strides.push_back(ov.strides[j]);
    }
  dv.sizes.push_back(self.size(-1));
  dv.strides.push_back(ov.strides[dim1] + ov.strides[dim2]);
  dv.offset += offset > 0 ? offset * ov.strides[dim2] : -offset * ov.strides[dim1];
  loom::write(buffer_of(out), x->dtype, dv, x);
  return out;
}

// --- trace: a sum over the diagonal view, accumulated as CPU does (float in double) ---

Tensor trace_fn(const Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  const c10::ScalarType st = self.scalar_type();
  static const CpuVerdicts verdicts;  // the dtypes the running torch's CPU traces (no bool)
  verdicts.check_beside_reduced_floats(st, [&] { at::trace(probe_operand(st, {1, 1})); });
  DType in = dtype_of(self);
  DType out_t = is_integral(in) ? DType::Int64 : in;
  DType acc = out_t == DType::Float32     ? DType::Float64
              : out_t == DType::Complex64 ? DType::Complex128
              : is_reduced_float(out_t)   ? DType::Float32
                                          : out_t;
  EngineLock g(engine_mutex());
  Tensor out = empty_loom({}, to_aten(out_t));
  NodeRef sum = reduce(ReduceKind::Sum, cast(read_tensor(self.diagonal()), acc), {0}, acc);
  assign(out, reindex(sum, {}, IndexMap{{0}, {}, {}}));
  return out;
}

// --- narrow_copy.out (CPU-only in PyTorch; the functional form is composite) ---

Tensor& narrow_copy_out(const Tensor& self, int64_t dim, c10::SymInt start_s, c10::SymInt length_s,
                        Tensor& out) {
  check_loom("narrow_copy", self);
  check_loom("narrow_copy", out);
  int64_t start = start_s.expect_int(), length = length_s.expect_int();
  TORCH_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  TORCH_CHECK(self.dtype() == out.dtype(), "narrow_copy(): expected an out tensor of dtype ",
              self.scalar_type(), ", got ", out.scalar_type());
  if (dim < 0) dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(dim < self.dim(), "narrow_copy(): dim ", dim, " out of range for ", self.dim(),
              "-d tensor");
  int64_t size = self.size(dim);
  if (start != size && start < 0) start = at::maybe_wrap_dim(start, size);
  TORCH_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = length;
  at::native::resize_output(out, sizes);
  EngineLock g(engine_mutex());
  if (out.numel() != 0) assign(out, read_tensor(self.narrow(dim, start, length)));
  return out;
}

// --- cat ---

constexpr size_t kMaxSelectInputs = 4;  // past this, a where-chain reads too much

// Writes the (non-empty) inputs side by side along `dim` into out, in out's dtype.
void write_cat(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out) {
  if (out.numel() == 0) return;
  dim = at::maybe_wrap_dim(dim, out.dim());
  DType t = dtype_of(out);
  std::vector<Tensor> parts;
  for (const Tensor& x : inputs)
    if (x.numel() != 0) parts.push_back(x);  // legacy 1-d empties and empty slabs
  std::vector<NodeRef> values;
  for (const Tensor& x : parts) values.push_back(cast(read_tensor(x), t));
  View ov = view_of(out);
  Buffer& buf = buffer_of(out);
  const int64_t m = parts[0].size(dim);
  bool equal =
      std::all_of(parts.begin(), parts.end(), [&](const Tensor& x) { return x.size(dim) == m; });
  if (equal && parts.size() <= kMaxSelectInputs) {
    // Split dim into (part, m): every part is read in range at every element.
    const int64_t n = int64_t(parts.size());
    View sv = ov;
    sv.sizes[dim] = m;
    sv.sizes.insert(sv.sizes.begin() + dim, n);
    sv.strides.insert(sv.strides.begin() + dim, m * ov.strides[dim]);
    IndexMap spread{Shape(ov.ndim(), 0), {}, {}};
    for (int64_t j = 0; j <= ov.ndim(); ++j) {
      int64_t k = j < dim ? j : j - 1;
      spread.dim_of.push_back(j == dim ? -1 : int(k));
      spread.mult.push_back(j == dim ? 0 : 1);
    }
    NodeRef which = iota(DType::Int64, sv.sizes, int(dim));
    NodeRef v = reindex(values.back(), sv.sizes, spread);
    for (int64_t i = n - 2; i >= 0; --i) {
      NodeRef is_i = binary(Op::Eq, which, ci(i, DType::Int64, sv.sizes));
      v = where(is_i, reindex(values[i], sv.sizes, spread), v);
    }
    loom::write(buf, t, sv, v);
    return;
  }
  int64_t offset = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t len = parts[i].size(dim);
    loom::write(buf, t, narrowed(ov, dim, offset, len), values[i]);
    offset += len;
  }
}

std::vector<Tensor> materialize(const at::ITensorListRef& tensors) {
  std::vector<Tensor> ts;
  for (const Tensor& t : tensors) ts.push_back(t);
  return ts;
}

std::vector<Tensor> metas_of(const std::vector<Tensor>& ts) {
  std::vector<Tensor> ms;
  for (const Tensor& t : ts) ms.push_back(to_meta(t));
  return ms;
}

Tensor cat_fn(const at::ITensorListRef& tensors, int64_t dim) {
  std::vector<Tensor> ts = materialize(tensors);
  Tensor meta = at::meta::cat(metas_of(ts), dim);  // CPU's checks, promotion and memory format
  for (const Tensor& x : ts) check_loom("cat", x);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  write_cat(ts, dim, out);
  return out;
}

Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, Tensor& out) {
  std::vector<Tensor> ts = materialize(tensors);
  Tensor mo = to_meta(out);
  at::meta::cat_outf(metas_of(ts), dim, mo);
  for (const Tensor& x : ts) check_loom("cat", x);
  check_loom("cat", out);
  match_out(out, mo);
  at::assert_no_internal_overlap(out);
  for (const Tensor& x : ts) at::assert_no_overlap(out, x);
  EngineLock g(engine_mutex());
  write_cat(ts, dim, out);
  return out;
}

// The CPU's pixel_(un)shuffle writes a new tensor in the input's suggested memory format;
// PyTorch's composite version (what a device without a kernel gets) ends in a reshape that
// is a view where it can be one, e.g. of an expanded gradient, so its strides differ.
// Loom stores the composite's value in the CPU's layout.
template <Tensor (*composite)(const Tensor&, int64_t)>
Tensor pixel_shuffle_fn(const Tensor& self, int64_t factor) {
  Tensor value = composite(self, factor);  // the shape checks and messages are the CPU's
  Tensor out = at::empty(value.sizes(), self.options().memory_format(self.suggest_memory_format()));
  out.copy_(value);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("pixel_shuffle", pixel_shuffle_fn<at::native::math_pixel_shuffle>);
  m.impl("pixel_unshuffle", pixel_shuffle_fn<at::native::math_pixel_unshuffle>);
  m.impl("flip", flip_fn);
  m.impl("roll", roll_fn);
  m.impl("tril", tri_fn<false>);
  m.impl("tril_", tri_ip<false>);
  m.impl("tril.out", tri_out<false>);
  m.impl("triu", tri_fn<true>);
  m.impl("triu_", tri_ip<true>);
  m.impl("triu.out", tri_out<true>);
  if (!composite_in_this_release("diag.out")) m.impl("diag.out", diag_out);
  m.impl("diag_embed", diag_embed_fn);
  m.impl("trace", trace_fn);
  m.impl("narrow_copy.out", narrow_copy_out);
  m.impl("cat", cat_fn);
  m.impl("cat.out", cat_out);
}

}  // namespace loom::aten
