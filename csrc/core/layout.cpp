#include "core/layout.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace loom {

int64_t numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t acc = 1;
  for (int64_t k = int64_t(sizes.size()) - 1; k >= 0; --k) {
    st[k] = acc;
    acc *= std::max<int64_t>(sizes[k], 1);
  }
  return st;
}

View View::contiguous(const Shape& sizes, int64_t offset) {
  return View{sizes, contiguous_strides(sizes), offset};
}

View dense_in_order_of(const View& like) {
  std::vector<size_t> order(like.sizes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return like.strides[a] > like.strides[b]; });
  View v{like.sizes, Shape(like.sizes.size()), 0};
  int64_t step = 1;
  for (size_t i = order.size(); i-- > 0;) {
    v.strides[order[i]] = step;
    step *= std::max<int64_t>(like.sizes[order[i]], 1);
  }
  return v;
}

int64_t View::numel() const { return loom::numel(sizes); }

std::string View::str() const {
  std::ostringstream os;
  os << "[";
  for (size_t k = 0; k < sizes.size(); ++k) os << (k ? "," : "") << sizes[k];
  os << "]/[";
  for (size_t k = 0; k < strides.size(); ++k) os << (k ? "," : "") << strides[k];
  os << "]+" << offset;
  return os.str();
}

bool is_contiguous(const View& v) {
  if (v.numel() == 0) return true;
  int64_t expect = 1;
  for (int64_t k = v.ndim() - 1; k >= 0; --k) {
    if (v.sizes[k] != 1 && v.strides[k] != expect) return false;
    expect *= v.sizes[k];
  }
  return true;
}

int64_t extent(const View& v) {
  int64_t hi = v.offset;
  for (int64_t k = 0; k < v.ndim(); ++k) {
    if (v.sizes[k] == 0) return 0;
    hi += (v.sizes[k] - 1) * v.strides[k];
  }
  return hi + 1;
}

// Dims of size > 1 sorted by stride, innermost first.
static std::vector<int> dims_by_stride(const View& v) {
  std::vector<int> d;
  for (int k = 0; k < int(v.ndim()); ++k)
    if (v.sizes[k] > 1) d.push_back(k);
  std::stable_sort(d.begin(), d.end(), [&](int a, int b) { return v.strides[a] < v.strides[b]; });
  return d;
}

bool is_non_overlapping(const View& v) {
  if (v.numel() <= 1) return true;
  int64_t reach = 0;  // max offset reachable by inner dims
  for (int k : dims_by_stride(v)) {
    if (v.strides[k] <= reach) return false;
    reach += (v.sizes[k] - 1) * v.strides[k];
  }
  return true;
}

bool is_dense_cover(const View& v, int64_t storage_numel) {
  if (v.offset != 0 || v.numel() != storage_numel) return false;
  int64_t expect = 1;
  for (int k : dims_by_stride(v)) {
    if (v.strides[k] != expect) return false;
    expect *= v.sizes[k];
  }
  return true;
}

std::optional<IndexMap> compose_through(const View& store, const View& load) {
  // Decompose the load's offset into store coordinates (store is a dense cover, so every
  // flat index has exactly one coordinate tuple).
  std::vector<int> order = dims_by_stride(store);
  IndexMap m;
  m.offs.assign(store.ndim(), 0);
  int64_t rest = load.offset;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    m.offs[*it] = rest / store.strides[*it];
    rest %= store.strides[*it];
  }
  if (rest != 0) return std::nullopt;
  Shape high = m.offs, low = m.offs;  // coordinate range touched per store dim
  m.dim_of.assign(load.ndim(), -1);
  m.mult.assign(load.ndim(), 0);
  for (int64_t j = 0; j < load.ndim(); ++j) {
    int64_t st = load.strides[j];
    if (load.sizes[j] == 1 || st == 0) continue;
    if (load.sizes[j] == 0) return std::nullopt;
    // The store dim with the largest stride dividing |st|; a negative stride (a flip
    // composed into the load) walks that dim backwards.
    int64_t mag = st < 0 ? -st : st;
    int found = -1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (mag >= store.strides[*it] && mag % store.strides[*it] == 0) {
        found = *it;
        break;
      }
    }
    if (found < 0) return std::nullopt;
    int64_t t = st / store.strides[found];
    m.dim_of[j] = found;
    m.mult[j] = t;
    (t > 0 ? high : low)[found] += t * (load.sizes[j] - 1);
  }
  for (int64_t k = 0; k < store.ndim(); ++k)
    if (low[k] < 0 || high[k] >= std::max<int64_t>(store.sizes[k], 1)) return std::nullopt;
  return m;
}

}  // namespace loom
