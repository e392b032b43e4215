// Advanced indexing: index (getitem with tensors), index_put_ (setitem), index_select,
// take/put_, masked_scatter_, and the data-dependent nonzero (masked_fill_ and masked_select
// are in ops_masked.cpp). Reads are
// gathers and writes are scatters at computed element indices, checked in the kernel.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cstring>
#include <optional>

#include "aten/op_util.h"
#include "core/extern.h"
#include "core/known.h"
#include "runtime/thread_pool.h"

namespace loom::aten {

namespace {

using at::Tensor;
using IndexList = c10::List<c10::optional<Tensor>>;

c10::Device loom_device() { return c10::Device(kLoomDeviceType, 0); }

bool is_mask(const Tensor& t) {
  return t.scalar_type() == at::kBool || t.scalar_type() == at::kByte;
}

// True when the element at `p` (of dtype t) is nonzero; floats ignore the sign bit, and a
// complex element is nonzero when either part is.
bool element_nonzero(const char* p, c10::ScalarType t) {
  if (at::isComplexType(t)) {
    c10::ScalarType part = c10::toRealValueType(t);
    return element_nonzero(p, part) || element_nonzero(p + c10::elementSize(part), part);
  }
  uint64_t bits = 0;
  size_t n = c10::elementSize(t);
  std::memcpy(&bits, p, n);
  if (at::isFloatingType(t)) bits &= ~(uint64_t(1) << (8 * n - 1));
  return bits != 0;
}

// NOTE [Nonzero scan]: the coordinates of a contiguous real tensor's nonzero elements, in
// one typed pass over it (a comparison's mask is the common input), written straight into
// the result's column-major layout: a vectorized count first, then, row by row of the last
// dim, each element's column index stored at the next free place and the place advanced
// by whether it is nonzero (no branch to mispredict on a random mask), and the row's other
// coordinates filled over the places it took. `(x > 1).nonzero()` over 1M floats took 13.5
// ms element by element through strides and a dtype switch, 3.4 with a branch per element
// (eager 4.2), 1.09 now. U is an unsigned type of the element's size; `mask` leaves out a
// float's sign bit. `cols` gets dim columns of n and one place more.
template <typename U>
int64_t count_nonzero(const U* p, int64_t numel, U mask) {
  int64_t n = 0;
  for (int64_t i = 0; i < numel; ++i) n += (p[i] & mask) != 0;
  return n;
}

template <typename U>
void fill_nonzero(const U* p, c10::IntArrayRef sizes, U mask, int64_t n, int64_t* cols) {
  const size_t dim = sizes.size();
  const int64_t row = sizes[dim - 1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dim; ++d) rows *= sizes[d];
  int64_t* last = cols + int64_t(dim - 1) * n;
  std::vector<int64_t> at(dim - 1, 0);
  int64_t k = 0;
  for (int64_t r = 0; r < rows; ++r, p += row) {
    const int64_t k0 = k;
    for (int64_t j = 0; j < row; ++j) {
      last[k] = j;
      k += (p[j] & mask) != 0;
    }
    for (size_t d = 0; d + 1 < dim; ++d)
      std::fill(cols + int64_t(d) * n + k0, cols + int64_t(d) * n + k, at[d]);
    for (size_t d = at.size(); d-- > 0;) {
      if (++at[d] < sizes[d]) break;
      at[d] = 0;
    }
  }
}

template <typename U>
std::vector<int64_t> scan_nonzero(const char* base, c10::IntArrayRef sizes, int64_t numel, U mask) {
  const U* p = reinterpret_cast<const U*>(base);
  const int64_t n = count_nonzero(p, numel, mask);
  std::vector<int64_t> cols(size_t(n) * sizes.size() + 1);
  fill_nonzero(p, sizes, mask, n, cols.data());
  cols.pop_back();
  return cols;
}

// The columns of a contiguous real tensor of one dim or more, or nothing.
std::optional<std::vector<int64_t>> contiguous_nonzero(const char* base, const Tensor& t) {
  const c10::ScalarType st = t.scalar_type();
  if (at::isComplexType(st) || !t.is_contiguous() || t.dim() == 0) return std::nullopt;
  const bool flt = at::isFloatingType(st);
  switch (t.element_size()) {
    case 1: return scan_nonzero<uint8_t>(base, t.sizes(), t.numel(), 0xff);
    case 2: return scan_nonzero<uint16_t>(base, t.sizes(), t.numel(), flt ? 0x7fff : 0xffff);
    case 4:
      return scan_nonzero<uint32_t>(base, t.sizes(), t.numel(), flt ? 0x7fffffffu : ~0u);
    case 8:
      return scan_nonzero<uint64_t>(base, t.sizes(), t.numel(),
                                    flt ? ~(uint64_t(1) << 63) : ~uint64_t(0));
  }
  return std::nullopt;
}

}  // namespace

// Lists the coordinates of self's nonzero elements, row-major, as an (n, dim) Int64 Loom
// tensor: the one place indexing must look at values on the host. A small integer mask
// whose values follow from the graph (a loss's `target == ignore_index`: NOTE [Known
// values]) is read there, with nothing realized and no wait for the executor; any other
// is realized.
Tensor nonzero_fn(const Tensor& self) {
  to_loom(self.scalar_type());
  const int64_t dim = self.dim();
  std::vector<int64_t> coords;  // row-major, where the columns are not scanned directly
  std::optional<std::vector<int64_t>> cols;
  int64_t n = 0;
  if (self.numel() > 0) {
    EngineLock g(engine_mutex());
    std::optional<std::vector<int64_t>> known;
    if (!at::isFloatingType(self.scalar_type()) && !self.is_complex() && self.numel() <= kMaxEagerCheck)
      known = known_values(read_tensor(self), self.numel());
    const char* base =
        known ? nullptr : storage_bytes(self) + self.storage_offset() * self.element_size();
    if (!known) cols = contiguous_nonzero(base, self);
    if (cols) n = int64_t(cols->size()) / dim;
    std::vector<int64_t> at(size_t(dim), 0);
    for (int64_t i = 0; i < (cols ? 0 : self.numel()); ++i) {
      int64_t off = 0;
      for (int64_t d = 0; d < dim; ++d) off += at[d] * self.stride(d);
      if (known ? (*known)[size_t(i)] != 0
                : element_nonzero(base + off * self.element_size(), self.scalar_type())) {
        coords.insert(coords.end(), at.begin(), at.end());
        ++n;
      }
      for (int64_t d = dim - 1; d >= 0; --d) {
        if (++at[d] < self.size(d)) break;
        at[d] = 0;
      }
    }
  }
  // As on CPU, the result is column-major: strides (1, n).
  Tensor out = empty_loom({n, dim}, {1, n}, at::kLong);
  if (!cols && !coords.empty()) {
    cols.emplace(coords.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t d = 0; d < dim; ++d) (*cols)[d * n + i] = coords[i * dim + d];
  }
  if (cols && !cols->empty()) {
    EngineLock g(engine_mutex());
    write_host(buffer_of(out), cols->data(), cols->size() * sizeof(int64_t));
  }
  return out;
}

namespace {

// torch 2.x's nonzero_static: nonzero's first `size` rows, row-major, padded with rows of
// fill_value (1.13 has no such op).
Tensor& nonzero_static_out(const Tensor& self, int64_t size, int64_t fill_value, Tensor& out) {
  check_operands("nonzero_static", {self, out});
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero_static: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  Tensor r = nonzero_fn(self);
  const int64_t n = std::min(r.size(0), size);
  at::native::resize_output(out, {size, self.dim()});
  if (out.numel() == 0) return out;
  if (n < size) out.fill_(fill_value);
  if (n > 0) out.narrow(0, 0, n).copy_(r.narrow(0, 0, n));
  return out;
}
Tensor nonzero_static_fn(const Tensor& self, int64_t size, int64_t fill_value) {
  Tensor out = empty_loom({0}, at::kLong);
  return nonzero_static_out(self, size, fill_value, out);
}

Tensor& nonzero_out(const Tensor& self, Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: Expected out tensor to have scalar type Long but got scalar type", out.scalar_type());
  Tensor r = nonzero_fn(self);
  if (out.sizes() != r.sizes()) {  // as CPU: column-major, like the functional result
    out.resize_({r.size(1), r.size(0)});
    out.t_();
  }
  assign(out, read_tensor(r));
  return out;
}

// Index tensors as PyTorch's indexing sees them: masks become their nonzero coordinates
// (one long index per mask dim), CPU indices move to Loom.
std::vector<c10::optional<Tensor>> expand_indices(const Tensor& self, const IndexList& indices) {
  std::vector<c10::optional<Tensor>> out;
  int64_t d = 0;
  for (const c10::optional<Tensor>& opt : indices) {
    if (!opt.has_value() || !opt->defined()) {
      out.emplace_back();
      ++d;
      continue;
    }
    Tensor t = is_loom(*opt) ? *opt : opt->to(loom_device());
    if (t.scalar_type() == at::kByte)
      TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                 "torch.bool instead.");
    if (!is_mask(t)) {
      out.emplace_back(t);
      ++d;
      continue;
    }
    for (int64_t j = 0; j < t.dim(); ++j) {
      TORCH_CHECK_INDEX(d + j < self.dim(), "too many indices for tensor of dimension ",
                        self.dim());
      TORCH_CHECK_INDEX(t.size(j) == self.size(d + j), "The shape of the mask ", t.sizes(),
                        " at index ", j, " does not match the shape of the indexed tensor ",
                        self.sizes(), " at index ", d + j);
    }
    Tensor nz = nonzero_fn(t);
    for (int64_t j = 0; j < t.dim(); ++j) out.emplace_back(nz.select(1, j));
    d += t.dim();
  }
  return out;
}

IndexList meta_list(const std::vector<c10::optional<Tensor>>& idx) {
  IndexList l;
  for (const auto& t : idx) l.push_back(t ? c10::optional<Tensor>(to_meta(*t)) : c10::nullopt);
  return l;
}

// The storage element indices that self[idx] reads, over the indexing result's `shape`.
NodeRef advanced_index(const Tensor& self, const std::vector<c10::optional<Tensor>>& idx,
                       const Shape& shape) {
  std::vector<int64_t> indexed;
  std::vector<Tensor> defined;
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d]) {
      indexed.push_back(int64_t(d));
      defined.push_back(*idx[d]);
    }
  Shape b = shape_of(at::infer_size_dimvector(defined[0].sizes(), defined[0].sizes()));
  for (const Tensor& t : defined) b = shape_of(at::infer_size_dimvector(b, t.sizes()));
  const int64_t nb = int64_t(b.size());
  bool adjacent = indexed.back() - indexed.front() + 1 == int64_t(indexed.size());
  int64_t bpos = adjacent ? indexed.front() : 0;
  // Where each non-indexed dim of self lands in the result.
  std::vector<int64_t> pos(size_t(self.dim()), -1);
  int64_t r = adjacent ? 0 : nb;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (adjacent && d == indexed.front()) r += nb;
    if (d < int64_t(idx.size()) && idx[d]) continue;
    pos[d] = r++;
  }
  IndexMap to_result;
  to_result.offs.assign(b.size(), 0);
  for (int64_t j = 0; j < int64_t(shape.size()); ++j) {
    bool in_b = j >= bpos && j < bpos + nb;
    to_result.dim_of.push_back(in_b ? int(j - bpos) : -1);
    to_result.mult.push_back(in_b ? 1 : 0);
  }
  std::vector<NodeRef> coord;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (pos[d] >= 0) {
      coord.push_back(iota(DType::Int64, shape, int(pos[d])));
      continue;
    }
    std::string msg = bounds_message(d, self.size(d));
    NodeRef i = reindex(index_value(*idx[d], b), shape, to_result);
    coord.push_back(checked_now(*idx[d], i, self.size(d), true, true, msg, std::nullopt, true));
  }
  return storage_index(self, coord);
}

// NOTE [Mask compaction]: the elements of self where a bool mask of its shape is true, in
// row-major order (x[mask], masked_select). The mask is read on the host for the count,
// the result's size, per chunk of 64K elements; one extern call then copies each chunk's
// elements to its offset, chunks across the pool. Through nonzero's coordinates and a
// gather, 1M floats took 6.9 ms (eager 6.5; x[x > 0] 11.1, eager 12.4). Masks up to
// kMaxEagerCheck elements keep that way, which reads a mask known from realized data
// (NOTE [Known values]) without running anything.
constexpr int64_t kCompactChunk = 1 << 16;

template <size_t kSize>
struct CompactJob {
  const char* values;
  const bool* mask;
  char* out;
  const int64_t* offsets;  // per chunk
  int64_t n;
};

template <size_t kSize>
void compact_chunks(char** bufs, int64_t start, int64_t end) {
  const auto& job = *reinterpret_cast<const CompactJob<kSize>*>(bufs[0]);
  for (int64_t c = start; c < end; ++c) {
    char* out = job.out + job.offsets[c] * int64_t(kSize);
    for (int64_t i = c * kCompactChunk, e = std::min(job.n, i + kCompactChunk); i < e; ++i)
      if (job.mask[i]) {
        std::memcpy(out, job.values + i * int64_t(kSize), kSize);
        out += kSize;
      }
  }
}

template <size_t kSize>
void compact(const char* values, const bool* mask, char* out, const int64_t* offsets, int64_t n) {
  CompactJob<kSize> job{values, mask, out, offsets, n};
  char* bufs[1] = {reinterpret_cast<char*>(&job)};
  run_parallel(compact_chunks<kSize>, bufs, (n + kCompactChunk - 1) / kCompactChunk, 1);
}

Tensor masked_compact(const Tensor& self, const Tensor& mask) {
  const int64_t n = self.numel();
  Tensor m = mask.contiguous(), v = self.contiguous();
  std::vector<int64_t> offsets;
  int64_t total = 0;
  {
    EngineLock g(engine_mutex());
    const auto* bits = reinterpret_cast<const bool*>(storage_bytes(m)) + m.storage_offset();
    for (int64_t i = 0; i < n; i += kCompactChunk) {
      offsets.push_back(total);
      for (int64_t j = i, e = std::min(n, i + kCompactChunk); j < e; ++j) total += bits[j];
    }
  }
  Tensor out = empty_loom({total}, self.scalar_type());
  if (total == 0) return out;
  const size_t item = self.element_size();
  auto call = std::make_shared<ExternCall>();
  call->name = "masked_select";
  call->out_nbytes = {total * int64_t(item)};
  call->accepts = [](size_t, const View& view) { return is_contiguous(view); };
  call->fn = [offsets, n, item](const std::vector<ExternInput>& in,
                                const std::vector<std::shared_ptr<Memory>>& res) {
    const char* values = static_cast<const char*>(in[0].mem->data) + in[0].view.offset * item;
    const bool* bits = static_cast<const bool*>(in[1].mem->data) + in[1].view.offset;
    char* dst = static_cast<char*>(res[0]->data);
    switch (item) {
      case 1: return compact<1>(values, bits, dst, offsets.data(), n);
      case 2: return compact<2>(values, bits, dst, offsets.data(), n);
      case 4: return compact<4>(values, bits, dst, offsets.data(), n);
      case 8: return compact<8>(values, bits, dst, offsets.data(), n);
      default: return compact<16>(values, bits, dst, offsets.data(), n);
    }
  };
  EngineLock g(engine_mutex());
  NodeRef flat = extern_call(call, {read_tensor(v), read_tensor(m)})[0];
  assign(out, make_node(Op::Load, to_loom(self.scalar_type()), {total}, {flat},
                        View::contiguous({total})));
  return out;
}

Tensor index_fn(const Tensor& self, const IndexList& indices) {
  // A CPU tensor indexed by Loom indices comes here (PrivateUse1 outranks CPU); the CPU's
  // meta function refuses it with this message.
  for (size_t k = 0; k < indices.size(); ++k) {
    c10::optional<Tensor> t = indices.get(k);
    TORCH_CHECK(!t || !t->defined() || t->is_cpu() || t->device() == self.device(),
                "indices should be either on ", at::kCPU,
                " or on the same device as the indexed tensor (", self.device(), ")");
  }
  check_operands("index", {self});
  if (indices.size() == 1 && indices[0].has_value() && indices[0]->defined() &&
      indices[0]->scalar_type() == at::kBool && is_loom(*indices[0]) && self.dim() > 0 &&
      indices[0]->sizes() == self.sizes() && self.numel() > kMaxEagerCheck)
    return masked_compact(self, *indices[0]);
  auto idx = expand_indices(self, indices);
  Tensor meta = at::meta::index(to_meta(self), meta_list(idx));
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  bool any = std::any_of(idx.begin(), idx.end(), [](const auto& t) { return t.has_value(); });
  if (!any) {
    assign(out, read_tensor(self));
    return out;
  }
  NodeRef at = advanced_index(self, idx, shape_of(meta.sizes()));
  assign(out, gather(buffer_of(self), to_loom(self.scalar_type()), at));
  return out;
}

Tensor& index_out(const Tensor& self, const IndexList& indices, Tensor& out) {
  Tensor r = index_fn(self, indices);
  at::native::resize_output(out, r.sizes());
  assign(out, read_tensor(r));
  return out;
}

// A single mask over self's leading dims with a one-element value needs no coordinates:
// it is an elementwise select, with nothing realized.
bool put_through_mask(Tensor& self, const IndexList& indices, const Tensor& values,
                      bool accumulate) {
  if (indices.size() != 1 || values.numel() != 1) return false;
  c10::optional<Tensor> m = indices.get(0);
  if (!m || !m->defined() || !is_loom(*m) || !is_mask(*m) || m->dim() > self.dim()) return false;
  if (m->sizes() != self.sizes().slice(0, size_t(m->dim()))) return false;
  Shape shape = shape_of(self.sizes());
  DType dtype = to_loom(self.scalar_type());
  EngineLock g(engine_mutex());
  IndexMap lead;  // the mask's dims are self's leading dims
  lead.offs.assign(size_t(m->dim()), 0);
  for (size_t j = 0; j < shape.size(); ++j) {
    bool keep = int64_t(j) < m->dim();
    lead.dim_of.push_back(keep ? int(j) : -1);
    lead.mult.push_back(keep ? 1 : 0);
  }
  NodeRef mask = reindex(cast(read_tensor(*m), DType::Bool), shape, lead);
  Tensor v = values.reshape({});
  NodeRef value = operand(v, shape, dtype);
  NodeRef old = read_tensor(self);
  if (accumulate) value = binary(Op::Add, old, value);
  write_tensor(self, where(mask, value, old));
  return true;
}

Tensor& index_put_impl(Tensor& self, const IndexList& indices, const Tensor& values,
                       bool accumulate, bool /*unsafe*/) {
  check_operands("index_put_", {self});
  auto check_dtype = [&] {
    TORCH_CHECK(values.scalar_type() == self.scalar_type(),
                "Index put requires the source and destination dtypes match, got ",
                self.scalar_type(), " for the destination and ", values.scalar_type(),
                " for the source.");
  };
  TORCH_CHECK(indices.size() <= size_t(self.dim()), "too many indices for tensor of dimension ",
              self.dim(), " (got ", indices.size(), ")");
  const bool expanded = warn_if_expanded(self, "index_put_", "tensor[indices] = tensor");
  if (values.numel() == 1) {
    check_dtype();
    if (expanded && !accumulate) {
      // The CPU fills the mask's elements as masked_fill_, which warns again.
      c10::optional<Tensor> m = indices.size() == 1 ? indices.get(0) : c10::nullopt;
      if (m && m->defined() && is_mask(*m) && m->dim() <= self.dim() &&
          m->sizes() == self.sizes().slice(0, size_t(m->dim()))) {
        Tensor full = *m;
        while (full.dim() < self.dim()) full = full.unsqueeze(-1);
        return self.masked_fill_(full.expand(self.sizes()), values.item());
      }
    } else if (put_through_mask(self, indices, values, accumulate)) {
      return self;
    }
  }
  at::assert_no_overlap(self, values);
  for (size_t k = 0; k < indices.size(); ++k) {
    c10::optional<Tensor> t = indices.get(k);
    if (t && t->defined()) at::assert_no_overlap(self, *t);
  }
  auto idx = expand_indices(self, indices);
  Tensor meta = at::meta::index(to_meta(self), meta_list(idx));
  TORCH_CHECK(at::is_expandable_to(values.sizes(), meta.sizes()), "shape mismatch: value tensor of shape ",
              values.sizes(), " cannot be broadcast to indexing result of shape ", meta.sizes());
  check_dtype();
  if (meta.numel() == 0) return self;
  Shape shape = shape_of(meta.sizes());
  DType dtype = to_loom(self.scalar_type());
  EngineLock g(engine_mutex());
  bool any = std::any_of(idx.begin(), idx.end(), [](const auto& t) { return t.has_value(); });
  NodeRef value = operand(values, shape, dtype);
  if (!any) {
    NodeRef old = read_tensor(self);
    write_tensor(self, accumulate ? binary(Op::Add, old, value) : value);
    return self;
  }
  NodeRef at = advanced_index(self, idx, shape);
  scatter(buffer_of(self), dtype, at, value,
          accumulate ? std::optional<ReduceKind>(ReduceKind::Sum) : std::nullopt);
  return self;
}

// Coordinates of the row-major linear indices `lin` (checked, Int64) in a tensor of `sizes`.
std::vector<NodeRef> unravel(NodeRef lin, c10::IntArrayRef sizes) {
  std::vector<NodeRef> coord(sizes.size());
  const Shape& shape = lin->shape;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      coord[0] = lin;
      break;
    }
    NodeRef size = int_const(sizes[d], shape);
    coord[d] = binary(Op::Remainder, lin, size);
    lin = binary(Op::FloorDiv, lin, size);
  }
  return coord;
}

NodeRef take_index(const Tensor& self, const Tensor& index) {
  std::string msg = "out of range: tried to access index {} on a tensor of " +
                    std::to_string(self.numel()) + " elements.";
  NodeRef values = index_value(index, shape_of(index.sizes()));
  NodeRef lin = checked_now(index, values, self.numel(), true, true, msg);
  if (self.dim() == 0) return binary(Op::Add, int_const(self.storage_offset(), lin->shape),
                                     binary(Op::Mul, lin, int_const(0, lin->shape)));
  return storage_index(self, unravel(lin, self.sizes()));
}

Tensor take_fn(const Tensor& self, const Tensor& index) {
  check_operands("take", {self, index});
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0),
                    "take(): tried to take from an empty tensor");
  EngineLock g(engine_mutex());
  Tensor out = empty_loom(index.sizes(), self.scalar_type());
  if (out.numel() == 0) return out;
  assign(out, gather(buffer_of(self), to_loom(self.scalar_type()), take_index(self, index)));
  return out;
}

Tensor& take_out(const Tensor& self, const Tensor& index, Tensor& out) {
  Tensor r = take_fn(self, index);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "take(): self and out expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and out.dtype = ", out.scalar_type());
  at::native::resize_output(out, r.sizes());
  assign(out, read_tensor(r));
  return out;
}

Tensor& put_fn(Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  check_operands("put_", {self, index, source});
  // Duplicate indices leave one of their values, which one unspecified (NOTE [Writing
  // Nondeterministic Operations] in PyTorch).
  if (!accumulate) at::globalContext().alertNotDeterministic("put_");
  to_meta(self).put_(to_meta(index), to_meta(source), accumulate);
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0),
                    "put_(): Tried to put elements into an empty tensor");
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  if (index.numel() == 0) return self;
  Tensor src = source.reshape(index.sizes());
  EngineLock g(engine_mutex());
  scatter(buffer_of(self), to_loom(self.scalar_type()), take_index(self, index), read_tensor(src),
          accumulate ? std::optional<ReduceKind>(ReduceKind::Sum) : std::nullopt);
  return self;
}

Tensor index_select_fn(const Tensor& self, int64_t dim, const Tensor& index) {
  check_operands("index_select", {self, index});
  // The CPU's checks and result: self's sizes with the index's length along dim,
  // contiguous. (PyTorch's meta index_select is Python.) A 0-dim self takes one index, as
  // later releases check; 1.13's CPU kernel reads every index and returns the scalar, or
  // uninitialized memory for an empty index.
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(!(self.dim() == 0 && index.numel() != 1),
              "index_select(): Index to scalar can have only 1 value, got ", index.numel(),
              " value(s)");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) sizes[size_t(dim)] = index.numel();
  EngineLock g(engine_mutex());
  Tensor out = empty_loom(sizes, self.scalar_type(), at::MemoryFormat::Contiguous);
  if (out.numel() == 0) return out;
  Shape shape = shape_of(out.sizes());
  if (self.dim() == 0) {
    NodeRef i = checked(index_value(index.reshape({}), {}), 1, false, true, "index out of range in self");
    assign(out, gather(buffer_of(self), to_loom(self.scalar_type()), binary(Op::Add, i, int_const(self.storage_offset(), {}))));
    return out;
  }
  std::vector<NodeRef> coord;
  for (int64_t d = 0; d < self.dim(); ++d) coord.push_back(iota(DType::Int64, shape, int(d)));
  IndexMap along{{0}, {}, {}};
  for (int64_t j = 0; j < self.dim(); ++j) {
    along.dim_of.push_back(j == dim ? 0 : -1);
    along.mult.push_back(j == dim ? 1 : 0);
  }
  NodeRef i = reindex(index_value(index.reshape({-1}), {index.numel()}), shape, along);
  coord[dim] = checked_now(index, i, self.size(dim), false, true, "index out of range in self");
  assign(out, gather(buffer_of(self), to_loom(self.scalar_type()), storage_index(self, coord)));
  return out;
}

Tensor& index_select_out(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  Tensor r = index_select_fn(self, dim, index);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_select(): self and result must have the same scalar type");
  at::native::resize_output(out, r.sizes());
  assign(out, read_tensor(r));
  return out;
}

// The k-th true element of the mask (row-major over self) takes source's k-th element:
// a running count of the mask picks the source element, all lazily.
Tensor& masked_scatter_fn(Tensor& self, const Tensor& mask, const Tensor& source) {
  check_operands("masked_scatter_", {self, mask, source});
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got",
              self.scalar_type(), " and ", source.scalar_type());
  at::assert_no_internal_overlap(self);
  mask_dtype_as_cpu(mask,
                    [](const Tensor& m) { at::zeros({1}).masked_scatter_(m, at::zeros({1})); });
  Tensor m = mask.expand(self.sizes());
  if (self.numel() == 0) return self;
  const char* too_few = "Number of elements of source < number of ones in mask";
  if (source.numel() == 0) {  // nothing to gather from: only an all-false mask is valid
    TORCH_CHECK(!m.any().item<bool>(), too_few);
    return self;
  }
  Tensor count = at::cumsum(m.reshape({-1}).to(at::kLong), 0).view(self.sizes());
  Tensor src = source.dim() == 0 ? source.view({1}) : source;
  Shape shape = shape_of(self.sizes());
  EngineLock g(engine_mutex());
  NodeRef take = cast(read_tensor(m), DType::Bool);
  NodeRef k = where(take, binary(Op::Sub, read_tensor(count), int_const(1, shape)), int_const(0, shape));
  // A mask known on the host (a loss's ignored targets) is checked here: a kernel that may
  // fault runs apart from the executor's queue.
  k = checked_known(k, src.numel(), false, too_few);
  DType dtype = to_loom(self.scalar_type());
  NodeRef v = gather(buffer_of(src), dtype, storage_index(src, unravel(k, src.sizes())));
  write_tensor(self, where(take, v, read_tensor(self)));
  return self;
}

// repeat_interleave(repeats): each position i repeated repeats[i] times. The result's
// size depends on the values, so they are read on the host.
Tensor repeat_interleave_fn(const Tensor& repeats, c10::optional<int64_t> output_size) {
  check_operands("repeat_interleave", {repeats});
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "\"repeat_interleave\" not implemented for '", repeats.scalar_type(), "'");
  Tensor host = repeats.cpu().to(at::kLong).contiguous();
  const int64_t* r = host.data_ptr<int64_t>();
  std::vector<int64_t> out;
  for (int64_t i = 0; i < host.numel(); ++i) {
    TORCH_CHECK(r[i] >= 0, "repeats can not be negative");
    out.insert(out.end(), size_t(r[i]), i);
  }
  TORCH_CHECK(!output_size || *output_size == int64_t(out.size()),
              "allocated size does not match required size");
  Tensor result = empty_loom({int64_t(out.size())}, at::kLong);
  if (!out.empty()) {
    EngineLock g(engine_mutex());
    write_host(buffer_of(result), out.data(), out.size() * sizeof(int64_t));
  }
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index.Tensor", TORCH_FN(index_fn));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl));
  m.impl("take", TORCH_FN(take_fn));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("put_", TORCH_FN(put_fn));
  m.impl("index_select", TORCH_FN(index_select_fn));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("nonzero", TORCH_FN(nonzero_fn));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(nonzero_static_fn));       // 2.x's; 1.13 has no schema for
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));  // these, which stay unused
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_fn));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave_fn));
}

}  // namespace loom::aten

