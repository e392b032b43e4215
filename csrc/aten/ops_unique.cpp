// unique and unique_consecutive (whole tensor or along a dim): their result sizes depend on
// the values, so the input is realized here (as for nonzero) and the distinct values,
// inverse indices and counts are found on the host, in the CPU's order (NOTE [Unique of
// the running torch]).
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

// Hashes a value as the CPU's unique does: bfloat16 by its bits, others by std::hash.
struct ValueHash {
  size_t operator()(const c10::BFloat16& v) const { return std::hash<uint16_t>()(v.x); }
  template <typename T>
  size_t operator()(const T& v) const {
    return std::hash<T>()(v);
  }
};

// A contiguous host tensor of a Loom tensor's values (realizing it): the realized memory
// itself where the tensor is contiguous (alive and unchanged while the op that reads it
// runs: 1M int64 were cloned for 0.9 ms before unique_consecutive read them), else a copy.
Tensor host_copy(const Tensor& self) {
  EngineLock g(engine_mutex());
  const char* base = storage_bytes(self) + self.storage_offset() * self.element_size();
  Tensor view = at::from_blob(const_cast<char*>(base), self.sizes(), self.strides(),
                              self.options().device(at::kCPU));
  return self.is_contiguous() ? view : view.clone(at::MemoryFormat::Contiguous);
}

// A contiguous Loom tensor holding the host tensor's values.
Tensor to_loom_tensor(const Tensor& host) {
  Tensor out = empty_loom(host.sizes(), host.scalar_type());
  if (host.numel() > 0) {
    Tensor h = host.contiguous();
    EngineLock g(engine_mutex());
    write_host(buffer_of(out), h.data_ptr(), size_t(h.numel() * h.element_size()));
  }
  return out;
}

Tensor long_host(c10::IntArrayRef sizes) { return at::empty(sizes, at::kLong); }

// A Loom tensor of a host result's values, sizes and strides (results of the CPU's kernels
// are dense, some of them permuted: unique along a dim).
Tensor to_loom_layout(const Tensor& host) {
  if (!host.is_non_overlapping_and_dense()) return to_loom_tensor(host);
  Tensor out = empty_loom(host.sizes(), host.strides(), host.scalar_type());
  if (host.numel() > 0) {
    // Dense: the elements fill [lowest address, + numel) whatever the order of the strides.
    int64_t low = 0;
    for (int64_t d = 0; d < host.dim(); ++d)
      if (host.stride(d) < 0) low += (host.size(d) - 1) * host.stride(d);
    const char* base = static_cast<const char*>(host.data_ptr()) + low * host.element_size();
    EngineLock g(engine_mutex());
    write_host(buffer_of(out), base, size_t(host.numel() * host.element_size()));
  }
  return out;
}

std::tuple<Tensor, Tensor, Tensor> to_loom_results(const std::tuple<Tensor, Tensor, Tensor>& r) {
  return {to_loom_layout(std::get<0>(r)), to_loom_layout(std::get<1>(r)),
          to_loom_layout(std::get<2>(r))};
}

// NOTE [Unique of the running torch]: unique's order and layout changed between releases.
// torch 1.13's CPU gives `sorted=False` results in the iteration order of a hash set filled
// in input order, sorts that set's values for `sorted=True` (std::sort, NaNs where they
// fall), and lays a result along a dim out as the transpose of its slices; 2.x sorts
// always (each NaN its own value, last) and moves the dim instead. Loom asks the running
// torch once, on a few CPU values, whether its unique sorts unasked; where it does, whole-
// tensor unique of floating values and everything along a dim runs the CPU's own kernel
// on the realized values (which also decides which dtypes it takes), while integers and
// bools keep Loom's sorted path (NOTE [Sorted unique]), whose results are the same for
// them. Along a dim the CPU's kernel runs in every release.
bool cpu_unique_always_sorts() {
  static const bool sorts = [] {
    Tensor v = std::get<0>(at::_unique2(at::tensor({5, 3, 9, 1, 7, 3}, at::kLong), false));
    return v.numel() == 5 && at::equal(v, std::get<0>(at::sort(v)));
  }();
  return sorts;
}

// Whether Loom's own whole-tensor unique gives the running torch's results for `st`.
bool own_unique(c10::ScalarType st, bool consecutive) {
  const bool taken = st == at::kBool || st == at::kBFloat16 || at::isIntegralType(st, false) ||
                     st == at::kFloat || st == at::kDouble;
  if (!taken) return false;  // the CPU's kernel takes it or raises its own error
  return consecutive || !cpu_unique_always_sorts() || !at::isFloatingType(st);
}

// The host results of unique: the values (of `in`'s dtype), the inverse as given, and the
// counts where asked for (empty otherwise, as on the CPU).
template <typename T>
std::tuple<Tensor, Tensor, Tensor> unique_result(const std::vector<T>& distinct, const Tensor& in,
                                                 const Tensor& inv,
                                                 const std::vector<int64_t>* counts) {
  Tensor values = at::empty({int64_t(distinct.size())}, in.options());
  std::copy(distinct.begin(), distinct.end(), values.data_ptr<T>());
  Tensor cnt = long_host({counts ? int64_t(counts->size()) : 0});
  if (counts) std::copy(counts->begin(), counts->end(), cnt.data_ptr<int64_t>());
  return {values, inv, cnt};
}

// NOTE [Sorted unique]: the CPU finds distinct values with a hash set, sorts them, and maps
// each element to its value's place (and counts them) through hash maps: 1M int64 of
// 1M values took 452 ms here (eager 277), 1M floats 1.5 s. Sorted, the same result comes
// from a stable sort of (key, position) pairs: runs of equal keys are the distinct values
// in order, their lengths the counts, each element's run its inverse, and a run's first
// element (the earliest in input order, the sort being stable) the value the hash set
// kept. The key orders values as < does and makes -0.0 and 0.0 one, as == does; an LSD
// radix sort by bytes skips the bytes no two keys differ in. Floats with a NaN (equal to
// nothing, each NaN its own value in the CPU's set, sorted by std::sort in an order of
// its own) and bfloat16 (hashed by its bits, so that the CPU's set may hold both zeros)
// keep the CPU's way, and so does `sorted=False`, which gives the set's order. (order_key
// and radix_sort are in op_util.h, NOTE [Radix order].)
template <typename T>
bool sorts_by_key(const T* data, int64_t n) {
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, c10::BFloat16>) {
    return false;
  } else if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i)
      if (data[i] != data[i]) return false;
  }
  return true;
}

// Distinct keys in an open-addressing table, numbered in order of first occurrence, up to
// `limit` of them (NOTE [Sorted unique]: few distinct values are found this way, the table
// staying in the cache; many by sorting).
class KeyTable {
 public:
  KeyTable(int64_t n, size_t limit) : limit_(limit) {
    size_t size = 64;
    while (size < 2 * limit && size < 2 * size_t(n)) size *= 2;
    keys_.resize(size);
    ids_.assign(size, -1);
    mask_ = size - 1;
  }
  // The key's number, numbering it if new; -1 when it would be number `limit`.
  int64_t id(uint64_t key) {
    for (size_t i = size_t((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;; i = (i + 1) & mask_) {
      if (ids_[i] < 0) {
        if (count_ == limit_) return -1;
        keys_[i] = key;
        ids_[i] = int64_t(count_);
        return int64_t(count_++);
      }
      if (keys_[i] == key) return ids_[i];
    }
  }
  size_t count() const { return count_; }

 private:
  std::vector<uint64_t> keys_;
  std::vector<int64_t> ids_;
  size_t mask_ = 0, count_ = 0;
  const size_t limit_;
};

// unique_values for sorting (NOTE [Sorted unique]).
template <typename T>
std::tuple<Tensor, Tensor, Tensor> sorted_unique(const Tensor& in, bool inverse, bool counts) {
  const T* data = in.data_ptr<T>();
  const int64_t n = in.numel();
  const bool extras = inverse || counts;
  Tensor inv = extras ? long_host(in.sizes()) : long_host({0});
  std::vector<T> distinct;
  std::vector<int64_t> runs;
  // Few distinct values: their first occurrences by table, sorted, then each element's
  // place through the table.
  KeyTable table(n, size_t(1) << 16);
  std::vector<int64_t> first;  // position of each numbered key's first occurrence
  int64_t* ip = extras ? inv.data_ptr<int64_t>() : nullptr;  // numbers, then ranks
  bool few = true;
  for (int64_t i = 0; i < n && few; ++i) {
    const int64_t id = table.id(order_key(data[i]));
    few = id >= 0;
    if (few && size_t(id) == first.size()) first.push_back(i);
    if (ip) ip[i] = id;
  }
  if (few) {
    std::vector<int64_t> order(first.size()), rank(first.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return order_key(data[first[size_t(a)]]) < order_key(data[first[size_t(b)]]);
    });
    for (size_t r = 0; r < order.size(); ++r) {
      rank[size_t(order[r])] = int64_t(r);
      distinct.push_back(data[first[size_t(order[r])]]);
    }
    runs.assign(order.size(), 0);
    for (int64_t i = 0; ip && i < n; ++i) {
      ip[i] = rank[size_t(ip[i])];
      runs[size_t(ip[i])] += 1;
    }
  } else {
    std::vector<uint64_t> keys(static_cast<size_t>(n));
    std::vector<int64_t> pos(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) keys[size_t(i)] = order_key(data[i]);
    std::iota(pos.begin(), pos.end(), 0);
    radix_sort(keys, pos);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i == 0 || keys[i] != keys[i - 1]) {
        distinct.push_back(data[pos[i]]);
        runs.push_back(0);
      }
      runs.back() += 1;
      if (ip) ip[pos[i]] = int64_t(distinct.size()) - 1;
    }
  }
  return unique_result(distinct, in, inv, counts ? &runs : nullptr);
}

// Distinct values of the whole tensor; the inverse (input-shaped) when either extra is
// asked for, the counts when they are. Unasked results are empty, as on the CPU.
template <typename T>
std::tuple<Tensor, Tensor, Tensor> unique_values(const Tensor& in, bool sorted, bool inverse,
                                                 bool counts) {
  const T* data = in.data_ptr<T>();
  const int64_t n = in.numel();
  if (sorted && sorts_by_key(data, n)) return sorted_unique<T>(in, inverse, counts);
  std::vector<T> distinct;
  if constexpr (std::is_same_v<T, bool>) {
    bool seen[2] = {false, false};
    for (int64_t i = 0; i < n; ++i) seen[data[i] ? 1 : 0] = true;
    for (int v = 0; v < 2; ++v)
      if (seen[v]) distinct.push_back(v == 1);
  } else {
    std::unordered_set<T, ValueHash> set(data, data + n);
    distinct.assign(set.begin(), set.end());
    if (sorted) std::sort(distinct.begin(), distinct.end());
  }
  Tensor values = at::empty({int64_t(distinct.size())}, in.options());
  std::copy(distinct.begin(), distinct.end(), values.data_ptr<T>());
  Tensor inv = long_host({0}), cnt = long_host({0});
  if (inverse || counts) {
    std::unordered_map<T, int64_t, ValueHash> where;
    for (size_t k = 0; k < distinct.size(); ++k) where[distinct[k]] = int64_t(k);
    inv = long_host(in.sizes());
    int64_t* ip = inv.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) ip[i] = where[data[i]];
    if (counts) {
      cnt = at::zeros({int64_t(distinct.size())}, at::kLong);
      int64_t* cp = cnt.data_ptr<int64_t>();
      // A value that equals none of the distinct ones (NaN) counts nowhere, as on the CPU.
      std::unordered_map<T, int64_t, ValueHash> tally;
      for (int64_t i = 0; i < n; ++i) tally[data[i]] += 1;
      for (size_t k = 0; k < distinct.size(); ++k) cp[k] = tally[distinct[k]];
    }
  }
  return {values, inv, cnt};
}

// Runs of equal neighbours of the whole tensor (flattened).
template <typename T>
std::tuple<Tensor, Tensor, Tensor> consecutive_values(const Tensor& in, bool inverse, bool counts) {
  const T* data = in.data_ptr<T>();
  const int64_t n = in.numel();
  std::vector<T> runs;
  std::vector<int64_t> lengths;
  Tensor inv = inverse ? long_host(in.sizes()) : long_host({0});
  int64_t* ip = inverse ? inv.data_ptr<int64_t>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || data[i] != runs.back()) {
      runs.push_back(data[i]);
      lengths.push_back(0);
    }
    lengths.back() += 1;
    if (ip) ip[i] = int64_t(runs.size()) - 1;
  }
  return unique_result(runs, in, inv, counts ? &lengths : nullptr);
}

// Along a dim (NOTE [Unique of the running torch]): the CPU's kernel on the realized values.
std::tuple<Tensor, Tensor, Tensor> unique_along(const Tensor& self, int64_t dim, bool consecutive,
                                                bool inverse, bool counts) {
  check_operands(consecutive ? "unique_dim_consecutive" : "unique_dim", {self});
  Tensor in = host_copy(self);
  return to_loom_results(consecutive ? at::unique_dim_consecutive(in, dim, inverse, counts)
                                     : at::unique_dim(in, dim, true, inverse, counts));
}

std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool sorted, bool inverse,
                                           bool counts) {
  check_operands("unique", {self});
  Tensor in = host_copy(self);
  if (!own_unique(self.scalar_type(), false))
    return to_loom_results(at::_unique2(in, sorted, inverse, counts));
  sorted = sorted || cpu_unique_always_sorts();
  Tensor v, i, c;
  AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kBool, self.scalar_type(), "unique", [&] {
    std::tie(v, i, c) = unique_values<scalar_t>(in, sorted, inverse, counts);
  });
  return to_loom_results({v, i, c});
}

std::tuple<Tensor, Tensor> unique1(const Tensor& self, bool sorted, bool inverse) {
  auto r = unique2(self, sorted, inverse, false);
  return {std::get<0>(r), std::get<1>(r)};
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self, bool inverse, bool counts,
                                                      c10::optional<int64_t> dim) {
  if (dim.has_value() && !(*dim == 0 && self.dim() == 1))
    return unique_along(self, *dim, true, inverse, counts);
  check_operands("unique_consecutive", {self});
  Tensor in = host_copy(self);
  if (!own_unique(self.scalar_type(), true))
    return to_loom_results(at::unique_consecutive(in, inverse, counts, dim));
  Tensor v, i, c;
  AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kBool, self.scalar_type(), "unique", [&] {
    std::tie(v, i, c) = consecutive_values<scalar_t>(in, inverse, counts);
  });
  return to_loom_results({v, i, c});
}

std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool /*sorted*/,
                                              bool inverse, bool counts) {
  return unique_along(self, dim, false, inverse, counts);  // along a dim, always sorted
}

std::tuple<Tensor, Tensor, Tensor> unique_dim_consecutive(const Tensor& self, int64_t dim,
                                                          bool inverse, bool counts) {
  return unique_along(self, dim, true, inverse, counts);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_unique", unique1);
  m.impl("_unique2", unique2);
  m.impl("unique_consecutive", unique_consecutive);
  m.impl("unique_dim", unique_dim);
  m.impl("unique_dim_consecutive", unique_dim_consecutive);
}

}  // namespace loom::aten
