// Strided views over flat storage: (sizes, strides, offset), all in elements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/small_vec.h"

namespace loom {

// See NOTE [Inline shapes].
using Shape = SmallVec<int64_t, 6>;

struct View {
  Shape sizes;
  Shape strides;
  int64_t offset = 0;

  static View contiguous(const Shape& sizes, int64_t offset = 0);
  int64_t ndim() const { return int64_t(sizes.size()); }
  int64_t numel() const;
  bool operator==(const View& o) const {
    return offset == o.offset && sizes == o.sizes && strides == o.strides;
  }
  std::string str() const;
};

int64_t numel(const Shape& sizes);
Shape contiguous_strides(const Shape& sizes);
// A dense view of `like`'s sizes at offset 0 whose dims are laid out in the order of
// `like`'s strides (largest outermost; ties keep the dims' order): a channels-last view
// gives a channels-last layout.
View dense_in_order_of(const View& like);
bool is_contiguous(const View& v);
// Highest element index the view touches plus one (0 for an empty view).
int64_t extent(const View& v);
// True when no two indices of `v` address the same element.
bool is_non_overlapping(const View& v);
// A view that visits every element of [0, storage_numel) exactly once: a permutation
// of a contiguous layout at offset 0.
bool is_dense_cover(const View& v, int64_t storage_numel);

// Maps consumer coordinates to producer coordinates: producer[k] = offs[k] + sum over
// consumer dims m with dim_of[m] == k of mult[m] * consumer[m]. Stride-0 consumer dims
// (dim_of = -1) map nowhere.
struct IndexMap {
  Shape offs;
  std::vector<int> dim_of;
  Shape mult;
  bool operator==(const IndexMap& o) const {
    return offs == o.offs && dim_of == o.dim_of && mult == o.mult;
  }
};

// If `store` is a dense cover of the storage, express the reads of `load` in the
// coordinates of `store`, when that is affine (one producer dim per consumer dim, no
// carries). Otherwise nullopt.
std::optional<IndexMap> compose_through(const View& store, const View& load);

}  // namespace loom
