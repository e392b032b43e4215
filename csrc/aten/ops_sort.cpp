// sort and topk (argsort, msort and the like go through them): an extern call that sorts
// each row of a realized copy on the host, with PyTorch's order (NaN above everything,
// stable for equal keys), producing values and Int64 indices. kthvalue, median and mode
// select on the host the way the CPU does, so that among equal values they report the same
// index.
#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>

#include "aten/op_util.h"
#include "aten/pointwise.h"
#include "core/extern.h"
#include "runtime/thread_pool.h"

namespace loom::aten {

namespace {

using at::Tensor;

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, c10::Half> ||
                std::is_same_v<T, c10::BFloat16>)
    return float(v) != float(v);
  return false;
}

// Sorts rows of length n, laid out (outer, n, inner) contiguously; keeps the first k.
// Rows run across the pool's threads (the executor's and a waiting host's), each as
// (value, index) pairs ordered by value and then index, which is the stable order: 1024
// rows of 1024 floats took 55.6 ms as one thread's stable sort of indices reading their
// keys through the row, 23.8 so (eager: 42.7).
template <typename T>
struct SortRows {
  const T* in;
  T* values;
  int64_t* indices;
  int64_t n, inner, k;
  bool descending;
};

// NOTE [Radix sort]: a whole row of at least kRadixSortMin values sorts as (key, position)
// pairs by an LSD radix sort (NOTE [Radix order] in op_util.h), stable, so equal values
// keep their positions' order as the comparison sort's tie-break by index does. NaN keys
// above everything; descending sorts the complemented keys, which keeps equal values in
// position order too and puts NaN first, as the CPU's descending sort does. The values
// stored are the row's own at the sorted positions (a -0.0 stays -0.0). One row of 1M
// floats took 85-89 ms as std::sort of pairs (eager 77). A topk of at least an eighth of
// its row sorts the row so too and keeps the first k: 256 rows' top 512 of 4096 took
// 15 ms as a partial sort (eager 12).
constexpr int64_t kRadixSortMin = 256;
constexpr int64_t kRadixTopkShare = 8;

template <typename T>
void radix_sort_row(const T* in, int64_t n, int64_t inner, bool descending,
                    std::vector<uint64_t>& keys, std::vector<int64_t>& pos) {
  keys.resize(size_t(n));
  pos.resize(size_t(n));
  for (int64_t j = 0; j < n; ++j) {
    const T v = in[j * inner];
    const uint64_t key = is_nan(v) ? ~uint64_t(0) : order_key(v);
    keys[size_t(j)] = descending ? ~key : key;
    pos[size_t(j)] = j;
  }
  radix_sort(keys, pos);
}

template <typename T>
void sort_row_range(char** bufs, int64_t start, int64_t end) {
  const SortRows<T>& job = *reinterpret_cast<const SortRows<T>*>(bufs[0]);
  const int64_t n = job.n, inner = job.inner, k = job.k;
  const bool descending = job.descending;
  if (n >= kRadixSortMin && k * kRadixTopkShare >= n) {
    std::vector<uint64_t> keys;
    std::vector<int64_t> pos;
    for (int64_t r = start; r < end; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const T* in = job.in + o * n * inner + i;
      radix_sort_row(in, n, inner, descending, keys, pos);
      for (int64_t j = 0; j < k; ++j) {
        job.values[o * k * inner + j * inner + i] = in[pos[size_t(j)] * inner];
        job.indices[o * k * inner + j * inner + i] = pos[size_t(j)];
      }
    }
    return;
  }
  auto less = [descending](T x, T y) {
    if (descending) return (is_nan(x) && !is_nan(y)) || x > y;
    return (!is_nan(x) && is_nan(y)) || x < y;
  };
  auto before = [&](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
    return less(a.first, b.first) || (!less(b.first, a.first) && a.second < b.second);
  };
  std::vector<std::pair<T, int64_t>> row(static_cast<size_t>(n));
  for (int64_t r = start; r < end; ++r) {
    const int64_t o = r / inner, i = r % inner;
    const T* in = job.in + o * n * inner + i;
    for (int64_t j = 0; j < n; ++j) row[size_t(j)] = {in[j * inner], j};
    if (k < n)
      std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
    else
      std::sort(row.begin(), row.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      job.values[o * k * inner + j * inner + i] = row[size_t(j)].first;
      job.indices[o * k * inner + j * inner + i] = row[size_t(j)].second;
    }
  }
}

template <typename T>
void sort_rows(const T* in, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
               int64_t k, bool descending) {
  SortRows<T> job{in, values, indices, n, inner, k, descending};
  char* bufs[1] = {reinterpret_cast<char*>(&job)};
  // A row costs about n log n comparisons; a task of under ~64K of them stays on one thread.
  int64_t log_n = 1;
  while ((int64_t(1) << log_n) < n) ++log_n;
  const int64_t per_row = std::max<int64_t>(1, n * log_n);
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / per_row);
  run_parallel(sort_row_range<T>, bufs, outer * inner, grain);
}

// Moves the k-th smallest of a[0..n) (by `gt`, NaN largest) to a[k], by the classic
// quickselect with a median-of-three pivot (the CPU's kthvalue runs the same steps, which
// decide the index reported among equal values). `swap` exchanges two positions.
template <typename T, class Gt, class Swap>
void quick_select(const T* a, int64_t n, int64_t k, Gt gt, Swap swap) {
  int64_t lo = 0, hi = n - 1;
  for (;;) {
    if (hi <= lo) return;
    if (hi == lo + 1) {
      if (gt(a[lo], a[hi])) swap(lo, hi);
      return;
    }
    swap(lo + (hi - lo) / 2, lo + 1);
    if (gt(a[lo + 1], a[hi])) swap(lo + 1, hi);
    if (gt(a[lo], a[hi])) swap(lo, hi);
    if (gt(a[lo + 1], a[lo])) swap(lo + 1, lo);
    int64_t i = lo + 1, j = hi;
    const T pivot = a[lo];
    for (;;) {
      do ++i; while (gt(pivot, a[i]));
      do --j; while (gt(a[j], pivot));
      if (j < i) break;
      swap(i, j);
    }
    swap(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
}

// One value and one index per row of length n laid out (outer, n, inner): pick(row, n,
// stride, value, index) for each row, rows across the pool's threads as sort_rows runs them.
// Each task works on its own copy of `pick` (its buffers). values and indices are (outer,
// inner).
template <typename T, class Pick>
struct PickRows {
  const T* in;
  T* values;
  int64_t* indices;
  int64_t n, inner;
  Pick pick;
};

template <typename T, class Pick>
void pick_row_range(char** bufs, int64_t start, int64_t end) {
  const auto& job = *reinterpret_cast<const PickRows<T, Pick>*>(bufs[0]);
  Pick pick = job.pick;
  for (int64_t r = start; r < end; ++r) {
    const int64_t o = r / job.inner, i = r % job.inner;
    pick(job.in + o * job.n * job.inner + i, job.n, job.inner, job.values + r, job.indices + r);
  }
}

// A row costs a few n steps (a selection) or, where `sorts`, some n log n (mode's sort):
// tasks of ~64K steps. Counted as n, mode's 64 rows of 1024 were one task on one thread
// (2.1 ms, eager 2.1).
template <typename T, class Pick>
void pick_rows(const T* in, T* values, int64_t* indices, int64_t outer, int64_t n,
               int64_t inner, Pick pick, bool sorts = false) {
  PickRows<T, Pick> job{in, values, indices, n, inner, std::move(pick)};
  char* bufs[1] = {reinterpret_cast<char*>(&job)};
  int64_t cost = std::max<int64_t>(n, 1);
  for (int64_t m = n; sorts && m > 1; m >>= 1) cost += n;
  run_parallel(pick_row_range<T, Pick>, bufs, outer * inner,
               std::max<int64_t>(1, (int64_t(1) << 16) / cost));
}

// The k-th smallest (0-based) of a row, and its index, by the CPU's quickselect steps.
template <typename T>
struct KthPick {
  int64_t k;
  std::vector<T> v;
  std::vector<int64_t> at;
  void operator()(const T* row, int64_t n, int64_t stride, T* value, int64_t* index) {
    v.resize(size_t(n));
    at.resize(size_t(n));
    for (int64_t j = 0; j < n; ++j) v[size_t(j)] = row[j * stride];
    std::iota(at.begin(), at.end(), 0);
    auto gt = [](T x, T y) { return (is_nan(x) && !is_nan(y)) || x > y; };
    quick_select(v.data(), n, k, gt, [&](int64_t i, int64_t j) {
      std::swap(v[size_t(i)], v[size_t(j)]);
      std::swap(at[size_t(i)], at[size_t(j)]);
    });
    *value = v[size_t(k)];
    *index = at[size_t(k)];
  }
};

// The median of a row and its index: the entry at the middle of its stable ascending order
// (NaN last), or for median the first NaN when the row has one; nanmedian takes the middle of
// the numbers, (n - nans - 1) / 2 (0 when all are NaN). The CPU's comparators break ties by
// index, so that entry is one of a strict order: nth_element finds it without sorting the
// row (1024 rows of 1024 floats: 26.0 ms sorted, eager 12.3).
template <typename T>
struct MedianPick {
  bool ignore_nan, with_index;
  std::vector<std::pair<T, int64_t>> e;
  std::vector<T> v;
  void operator()(const T* row, int64_t n, int64_t stride, T* value, int64_t* index) {
    if (!with_index) return value_only(row, n, stride, value, index);
    e.resize(size_t(n));
    int64_t nans = 0;
    for (int64_t j = 0; j < n; ++j) {
      e[size_t(j)] = {row[j * stride], j};
      nans += is_nan(row[j * stride]);
    }
    int64_t pos = ignore_nan ? std::max<int64_t>(n - nans - 1, 0) / 2
                             : (nans > 0 ? n - nans : (n - 1) / 2);
    std::nth_element(e.begin(), e.begin() + pos, e.end(), [](const auto& a, const auto& b) {
      if (is_nan(a.first) || is_nan(b.first))
        return is_nan(b.first) && (!is_nan(a.first) || a.second < b.second);
      return a.first < b.first || (!(b.first < a.first) && a.second < b.second);
    });
    *value = e[size_t(pos)].first;
    *index = e[size_t(pos)].second;
  }
  // The median of every element has no index: the numbers alone are selected (1M floats:
  // 12.9 ms as pairs, eager 8.3).
  void value_only(const T* row, int64_t n, int64_t stride, T* value, int64_t* index) {
    v.clear();
    v.reserve(size_t(n));
    for (int64_t j = 0; j < n; ++j)
      if (!is_nan(row[j * stride])) v.push_back(row[j * stride]);
    *index = 0;
    if (v.size() < size_t(n) && (!ignore_nan || v.empty())) {
      *value = std::numeric_limits<T>::quiet_NaN();
      return;
    }
    auto mid = v.begin() + (int64_t(v.size()) - 1) / 2;
    std::nth_element(v.begin(), mid, v.end());
    *value = *mid;
  }
};

// The most frequent value of a row and an index of it: the row's (value, index) pairs are
// sorted by value with std::sort and the longest run's last pair taken, the CPU's steps
// (its std::sort, from the same library headers, orders equal values the same way, which
// decides the index reported).
template <typename T>
struct ModePick {
  std::vector<std::pair<T, int64_t>> e;
  void operator()(const T* row, int64_t n, int64_t stride, T* value, int64_t* index) {
    e.resize(size_t(n));
    for (int64_t j = 0; j < n; ++j) e[size_t(j)] = {row[j * stride], j};
    std::sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    T mode = T(0);
    int64_t at = 0, run = 0, best = 0;
    for (int64_t j = 0; j < n; ++j) {
      ++run;
      if (j == n - 1 || e[size_t(j)].first != e[size_t(j + 1)].first) {
        if (run > best) mode = e[size_t(j)].first, at = e[size_t(j)].second, best = run;
        run = 0;
      }
    }
    *value = mode;
    *index = at;
  }
};

// Values and indices of the first k entries of each row along `dim`, sorted, as two
// contiguous flat values of `shape` with dim resized to k.
std::vector<NodeRef> sort_call(const Tensor& self, int64_t dim, int64_t k, bool descending) {
  const c10::ScalarType st = self.scalar_type();
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < dim) outer *= self.size(d);
    if (d > dim) inner *= self.size(d);
  }
  auto call = std::make_shared<ExternCall>();
  call->name = "sort";
  int64_t count = outer * k * inner;
  call->out_nbytes = {std::max<int64_t>(count, 1) * int64_t(self.element_size()),
                      std::max<int64_t>(count, 1) * int64_t(sizeof(int64_t))};
  call->accepts = [](size_t, const View& v) { return is_contiguous(v); };
  call->fn = [=](const std::vector<ExternInput>& in, const std::vector<std::shared_ptr<Memory>>& out) {
    AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, st, "loom_sort", [&] {
      const auto* src = static_cast<const scalar_t*>(in[0].mem->data) + in[0].view.offset;
      sort_rows(src, static_cast<scalar_t*>(out[0]->data), static_cast<int64_t*>(out[1]->data),
                outer, n, inner, k, descending);
    });
  };
  return extern_call(call, {read_tensor(self)});
}

// Stores the call's outputs into values/indices (which have the meta results' layouts).
void store_sorted(const std::vector<NodeRef>& flats, const Tensor& values, const Tensor& indices) {
  Shape shape = shape_of(values.sizes());
  View dense = View::contiguous(shape);
  DType vt = to_loom(values.scalar_type());
  assign(values, make_node(Op::Load, vt, shape, {flats[0]}, dense));
  assign(indices, make_node(Op::Load, DType::Int64, shape, {flats[1]}, dense));
}

// The CPU's verdict on self's dtype for sort or topk, raised at the op: the sort call's
// own dispatch would raise only when the call runs, at a later wait.
void check_sort_dtype(const Tensor& self, bool topk) {
  static const CpuVerdicts sort_verdicts, topk_verdicts;
  const c10::ScalarType st = self.scalar_type();
  (topk ? topk_verdicts : sort_verdicts).check(st, [&] {
    const Tensor p = probe_operand(st);
    if (topk) at::topk(p, 1);
    else at::sort(p);
  });
}

void sort_into(const Tensor& self, int64_t dim, bool descending, int64_t k, const Tensor& values,
               const Tensor& indices) {
  if (values.numel() == 0) return;
  dim = at::maybe_wrap_dim(dim, self.dim());
  EngineLock g(engine_mutex());
  store_sorted(sort_call(self, dim, k, descending), values, indices);
}

std::tuple<Tensor, Tensor> sort_stable(const Tensor& self, c10::optional<bool> stable, int64_t dim,
                                       bool descending) {
  check_operands("sort", {self});
  auto meta = at::meta::sort(to_meta(self), stable, dim, descending);
  check_sort_dtype(self, false);
  Tensor values = result_like(std::get<0>(meta)), indices = result_like(std::get<1>(meta));
  sort_into(self, dim, descending, self.dim() == 0 ? 1 : self.size(at::maybe_wrap_dim(dim, self.dim())),
            values, indices);
  return {values, indices};
}

std::tuple<Tensor&, Tensor&> sort_values_stable(const Tensor& self, c10::optional<bool> stable,
                                                int64_t dim, bool descending, Tensor& values,
                                                Tensor& indices) {
  check_operands("sort", {self, values, indices});
  auto meta = at::meta::sort(to_meta(self), stable, dim, descending);
  check_sort_dtype(self, false);
  at::native::resize_output(values, std::get<0>(meta).sizes());
  at::native::resize_output(indices, std::get<1>(meta).sizes());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "sort(): indices must be a Long tensor");
  sort_into(self, dim, descending, self.dim() == 0 ? 1 : self.size(at::maybe_wrap_dim(dim, self.dim())),
            values, indices);
  return {values, indices};
}

Tensor argsort_stable(const Tensor& self, bool stable, int64_t dim, bool descending) {
  return std::get<1>(sort_stable(self, stable, dim, descending));
}

std::tuple<Tensor, Tensor> topk_fn(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                   bool sorted) {
  check_operands("topk", {self});
  auto meta = at::meta::topk(to_meta(self), k, dim, largest, sorted);
  check_sort_dtype(self, true);
  Tensor values = result_like(std::get<0>(meta)), indices = result_like(std::get<1>(meta));
  sort_into(self, dim, largest, k, values, indices);
  return {values, indices};
}

std::tuple<Tensor&, Tensor&> topk_values(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                         bool sorted, Tensor& values, Tensor& indices) {
  check_operands("topk", {self, values, indices});
  auto meta = at::meta::topk(to_meta(self), k, dim, largest, sorted);
  check_sort_dtype(self, true);
  at::native::resize_output(values, std::get<0>(meta).sizes());
  at::native::resize_output(indices, std::get<1>(meta).sizes());
  sort_into(self, dim, largest, k, values, indices);
  return {values, indices};
}

// Runs `pick(in, values, indices, outer, n, inner)` (dispatched on self's dtype by
// `dispatch`) over self's rows along dim as an extern call, storing one value and one index
// per row into values/indices (sized already, not empty).
template <class Dispatch>
void store_row_picks(const char* name, const Tensor& self, int64_t dim, const Tensor& values,
                     const Tensor& indices, Dispatch dispatch) {
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < dim) outer *= self.size(d);
    if (d > dim) inner *= self.size(d);
  }
  const int64_t item = int64_t(self.element_size());
  auto call = std::make_shared<ExternCall>();
  call->name = name;
  call->out_nbytes = {outer * inner * item, outer * inner * int64_t(sizeof(int64_t))};
  call->accepts = [](size_t, const View& v) { return is_contiguous(v); };
  call->fn = [=](const std::vector<ExternInput>& in, const std::vector<std::shared_ptr<Memory>>& out) {
    dispatch(static_cast<const char*>(in[0].mem->data) + in[0].view.offset * item,
             out[0]->data, static_cast<int64_t*>(out[1]->data), outer, n, inner);
  };
  EngineLock g(engine_mutex());
  store_sorted(extern_call(call, {read_tensor(self)}), values, indices);
}

// self's sizes with dim reduced: kept as 1 with keepdim, else dropped (a 0-dim self's none).
std::vector<int64_t> reduced_shape(const Tensor& self, int64_t dim, bool keepdim) {
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) shape[size_t(dim)] = 1;
    else shape.erase(shape.begin() + dim);
  }
  return shape;
}

// --- kthvalue ---

std::tuple<Tensor&, Tensor&> kthvalue_values(const Tensor& self, int64_t k, int64_t dim,
                                             bool keepdim, Tensor& values, Tensor& indices) {
  check_operands("kthvalue", {self, values, indices});
  dim = c10::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  if (self.dim() > 0)
    TORCH_CHECK_INDEX(n != 0, "kthvalue(): Expected reduction dim ", dim, " to have non-zero size.");
  TORCH_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", dim);
  at::assert_no_overlap(self, values);
  std::vector<int64_t> shape = reduced_shape(self, dim, keepdim);
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  TORCH_CHECK(indices.scalar_type() == at::kLong);
  const c10::ScalarType st = self.scalar_type();
  static const CpuVerdicts verdicts;  // 2.x's CPU takes float16 too
  verdicts.check(st, [&] { at::kthvalue(probe_operand(st), 1); });
  if (values.numel() == 0) return {values, indices};
  store_row_picks("kthvalue", self, dim, values, indices,
                  [st, k](const char* src, void* v, int64_t* i, int64_t outer, int64_t n, int64_t inner) {
                    AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kHalf, st, "loom_kthvalue", [&] {
                      pick_rows(reinterpret_cast<const scalar_t*>(src), static_cast<scalar_t*>(v),
                                i, outer, n, inner, KthPick<scalar_t>{k - 1, {}, {}});
                    });
                  });
  return {values, indices};
}

// --- median and nanmedian ---

void store_medians(const char* name, const Tensor& self, int64_t dim, const Tensor& values,
                   const Tensor& indices, bool ignore_nan, bool with_index) {
  const c10::ScalarType st = self.scalar_type();
  store_row_picks(name, self, dim, values, indices,
                  [st, ignore_nan, with_index](const char* src, void* v, int64_t* i, int64_t outer,
                                               int64_t n, int64_t inner) {
                    AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, st, "loom_median", [&] {
                      pick_rows(reinterpret_cast<const scalar_t*>(src), static_cast<scalar_t*>(v), i,
                                outer, n, inner, MedianPick<scalar_t>{ignore_nan, with_index, {}, {}});
                    });
                  });
}

std::tuple<Tensor&, Tensor&> median_dim_values(const Tensor& self, int64_t dim, bool keepdim,
                                               Tensor& values, Tensor& indices, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian" : "median";
  check_operands(name, {self, values, indices});
  dim = c10::maybe_wrap_dim(dim, self.dim());
  if (self.dim() > 0)
    TORCH_CHECK_INDEX(self.size(dim) != 0, "median(): Expected reduction dim ", dim,
                      " to have non-zero size.");
  at::checkScalarType("median", {indices, "indices", 1}, at::kLong);
  at::checkSameType("median", {values, "values", 0}, {self, "self", 2});
  // The dtypes of the running torch's kernel (2.x added float16 and bfloat16).
  LOOM_CPU_VERDICT(self.scalar_type(), c10::ScalarType::Undefined, {
    Tensor p = probe_operand(self.scalar_type());
    ignore_nan ? at::nanmedian(p, 0) : at::median(p, 0);
  });
  std::vector<int64_t> shape = reduced_shape(self, dim, keepdim);
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  if (values.numel() > 0) store_medians(name, self, dim, values, indices, ignore_nan, true);
  return {values, indices};
}
std::tuple<Tensor&, Tensor&> median_out(const Tensor& self, int64_t dim, bool keepdim,
                                        Tensor& values, Tensor& indices) {
  return median_dim_values(self, dim, keepdim, values, indices, false);
}
std::tuple<Tensor&, Tensor&> nanmedian_out(const Tensor& self, int64_t dim, bool keepdim,
                                           Tensor& values, Tensor& indices) {
  return median_dim_values(self, dim, keepdim, values, indices, true);
}

// The median of every element (NaN for none), with no index.
Tensor median_all(const Tensor& self, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian" : "median";
  check_operands(name, {self});
  LOOM_CPU_VERDICT(self.scalar_type(), c10::ScalarType::Undefined, {
    Tensor p = probe_operand(self.scalar_type());
    ignore_nan ? at::nanmedian(p) : at::median(p);
  });
  if (self.numel() == 0)
    return at::full({}, std::numeric_limits<float>::quiet_NaN()).to(self.options());
  Tensor values = empty_loom({}, self.scalar_type()), indices = empty_loom({}, at::kLong);
  store_medians(name, self.reshape({-1}), 0, values, indices, ignore_nan, false);
  return values;
}
Tensor median_fn(const Tensor& self) { return median_all(self, false); }
Tensor nanmedian_fn(const Tensor& self) { return median_all(self, true); }

// --- mode ---

std::tuple<Tensor, Tensor> mode_fn(const Tensor& self, int64_t dim, bool keepdim) {
  check_operands("mode", {self});
  dim = c10::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  if (self.dim() > 0)
    TORCH_CHECK_INDEX(self.numel() > 0 || self.size(dim) != 0, "mode(): Expected reduction dim ",
                      dim, " to have non-zero size.");
  std::vector<int64_t> shape = reduced_shape(self, dim, keepdim);
  const c10::ScalarType st = self.scalar_type();
  TORCH_CHECK(!at::isComplexType(st), "\"mode_cpu\" not implemented for '", c10::toString(st), "'");
  Tensor values = empty_loom(shape, st), indices = empty_loom(shape, at::kLong);
  if (values.numel() == 0) return {values, indices};
  store_row_picks("mode", self, dim, values, indices,
                  [st](const char* src, void* v, int64_t* i, int64_t outer, int64_t n, int64_t inner) {
                    AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, st, "loom_mode", [&] {
                      pick_rows(reinterpret_cast<const scalar_t*>(src), static_cast<scalar_t*>(v), i,
                                outer, n, inner, ModePick<scalar_t>{}, /*sorts=*/true);
                    });
                  });
  return {values, indices};
}

// The CPU's mode_out checks its outputs before anything else, with its own messages.
std::tuple<Tensor&, Tensor&> mode_values(const Tensor& self, int64_t dim, bool keepdim,
                                         Tensor& values, Tensor& indices) {
  check_operands("mode", {self, values, indices});
  TORCH_CHECK(self.scalar_type() == values.scalar_type(), "expected scalar type '",
              self.scalar_type(), "' but got '", values.scalar_type(), "' for values output");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type '", at::kLong,
              "' but got '", indices.scalar_type(), "' for indices output");
  auto [v, i] = mode_fn(self, dim, keepdim);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.stable", TORCH_FN(sort_stable));
  m.impl("sort.values_stable", TORCH_FN(sort_values_stable));
  if (!composite_in_this_release("argsort.stable"))
    m.impl("argsort.stable", TORCH_FN(argsort_stable));
  m.impl("topk", TORCH_FN(topk_fn));
  m.impl("topk.values", TORCH_FN(topk_values));
  m.impl("kthvalue.values", kthvalue_values);
  m.impl("mode", mode_fn);
  m.impl("mode.values", mode_values);
  m.impl("median", median_fn);
  m.impl("median.dim_values", median_out);
  m.impl("nanmedian", nanmedian_fn);
  m.impl("nanmedian.dim_values", nanmedian_out);
}

}  // namespace loom::aten
