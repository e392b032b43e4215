// histogram and histogramdd. Each element's bin along each dimension is found as the CPU
// finds it; the last bin takes its right edge; the weights (or 1) of the elements inside
// every dimension's edges are added to their bins by a scatter-add. With bin counts, the
// edges are linspace over the range (the data's, read here as the CPU does) and a bin
// comes from linear interpolation checked against its neighbouring edges; with explicit
// edges, from the CPU's binary search, step by step, so edges out of order give its
// answer too.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;
using OptTensor = c10::optional<Tensor>;
using Range = c10::optional<at::ArrayRef<double>>;

bool has_weight(const OptTensor& w) { return w.has_value() && w->defined(); }

// The CPU's checks of input (M, N), its edges and its weight.
void check_inputs(const Tensor& input, at::TensorList bins, const OptTensor& weight) {
  TORCH_CHECK(input.dim() >= 2,
              "torch.histogramdd: input tensor should have at least 2 dimensions, but got ",
              input.dim());
  const int64_t n = input.size(-1);
  TORCH_CHECK(int64_t(bins.size()) == n, "torch.histogramdd: expected ", n,
              " sequences of bin edges for a ", n, "-dimensional histogram but got ", bins.size());
  for (int64_t d = 0; d < n; ++d) {
    const Tensor& e = bins[size_t(d)];
    TORCH_CHECK(input.dtype() == e.dtype(),
                "torch.histogramdd: input tensor and bins tensors should",
                " have the same dtype, but got input with dtype ", input.dtype(),
                " and bins for dimension ", d, " with dtype ", e.dtype());
    TORCH_CHECK(e.dim() == 1, "torch.histogramdd: bins tensor should have one dimension,",
                " but got ", e.dim(), " dimensions in the bins tensor for dimension ", d);
    TORCH_CHECK(e.numel() > 0, "torch.histogramdd: bins tensor should have at least 1 element,",
                " but got ", e.numel(), " elements in the bins tensor for dimension ", d);
  }
  if (has_weight(weight)) {
    TORCH_CHECK(input.dtype() == weight->dtype(),
                "torch.histogramdd: if weight tensor is provided,",
                " input tensor and weight tensor should have the same dtype, but got input(",
                input.dtype(), "), and weight(", weight->dtype(), ")");
    std::vector<int64_t> want = input.sizes().vec(), got = weight->sizes().vec();
    want.pop_back();
    if (got.empty()) got = {1};
    TORCH_CHECK(
        want == got, "torch.histogramdd: if weight tensor is provided it should have the same",
        " shape as the input tensor excluding its innermost dimension, but got input with shape ",
        input.sizes(), " and weight with shape ", weight->sizes());
  }
}

void prepare_out(const Tensor& input, const std::vector<int64_t>& bin_ct, Tensor& hist,
                 at::TensorList edges) {
  TORCH_CHECK(input.dtype() == hist.dtype(), "torch.histogram: input tensor and hist tensor should",
              " have the same dtype, but got input ", input.dtype(), " and hist ", hist.dtype());
  for (size_t d = 0; d < bin_ct.size(); ++d) {
    TORCH_CHECK(input.dtype() == edges[d].dtype(),
                "torch.histogram: input tensor and bin_edges tensor should",
                " have the same dtype, but got input ", input.dtype(), " and bin_edges ",
                edges[d].dtype(), " for dimension ", d);
    TORCH_CHECK(bin_ct[d] > 0, "torch.histogram(): bins must be > 0, but got ", bin_ct[d],
                " for dimension ", d);
    at::native::resize_output(edges[d], {bin_ct[d] + 1});
  }
  at::native::resize_output(hist, bin_ct);
}

// The outer edges of each dimension of input (M, N): the range, or the data's (read here).
std::pair<std::vector<double>, std::vector<double>> outer_edges(const Tensor& input,
                                                                const Range& range) {
  const int64_t n = input.size(-1);
  std::vector<double> lo(size_t(n), 0.0), hi(size_t(n), 1.0);
  if (range.has_value()) {
    TORCH_CHECK(int64_t(range->size()) == 2 * n, "torch.histogramdd: for a ", n,
                "-dimensional histogram", " range should have ", 2 * n, " elements, but got ",
                range->size());
    for (int64_t d = 0; d < n; ++d)
      lo[size_t(d)] = (*range)[size_t(2 * d)], hi[size_t(d)] = (*range)[size_t(2 * d + 1)];
  } else if (input.numel() > 0) {
    const c10::ScalarType st = input.scalar_type();
    TORCH_CHECK(st == at::kFloat || st == at::kDouble, "\"histogramdd\" not implemented for '",
                c10::toString(st), "'");
    auto [mins, maxs] = at::aminmax(input, 0);
    Tensor a = mins.to(at::kCPU).to(at::kDouble), b = maxs.to(at::kCPU).to(at::kDouble);
    for (int64_t d = 0; d < n; ++d)
      lo[size_t(d)] = a[d].item<double>(), hi[size_t(d)] = b[d].item<double>();
  }
  for (int64_t d = 0; d < n; ++d) {
    double& l = lo[size_t(d)];
    double& h = hi[size_t(d)];
    TORCH_CHECK(std::isfinite(l) && std::isfinite(h), "torch.histogramdd: dimension ", d,
                "'s range [", l, ", ", h, "] is not finite");
    TORCH_CHECK(l <= h, "torch.histogramdd: min should not exceed max, but got", " min ", l,
                " max ", h, " for dimension ", d);
    if (l == h) l -= 0.5, h += 0.5;
  }
  return {lo, hi};
}

// A bin's edge index by interpolation over evenly spaced edges, then the last of its
// neighbouring edges at or below the value; and whether the value lies within the edges
// (NaN does not: the CPU's bin for it is undefined).
std::pair<Tensor, Tensor> interpolated_bin(const Tensor& v, const Tensor& edges) {
  const int64_t e = edges.numel(), bins = e - 1;
  Tensor first = edges[0], last = edges[bins];
  Tensor inside = (v >= first) & (v <= last);
  Tensor guess = at::where(inside, (v - first) / (last - first) * double(bins), at::zeros_like(v))
                     .to(at::kLong);
  Tensor lo = (guess - 1).clamp_min(0), hi = (guess + 2).clamp_max(e);
  Tensor pos = lo - 1;
  for (int k = -1; k <= 1; ++k) {
    Tensor at_k = guess + k;
    Tensor edge = edges.index_select(0, at_k.clamp(0, bins));
    pos = pos + ((at_k >= lo) & (at_k < hi) & (edge <= v)).to(at::kLong);
  }
  return {pos, inside};
}

// The CPU's std::upper_bound over the edges, step by step, less one; values below the first
// edge or above the last are outside (NaN is not, as on the CPU).
std::pair<Tensor, Tensor> searched_bin(const Tensor& v, const Tensor& edges) {
  const int64_t e = edges.numel();
  Tensor first = at::zeros_like(v, at::kLong), len = at::full_like(v, e, at::kLong);
  for (int64_t left = e; left > 0; left /= 2) {
    Tensor half = at::div(len, 2, "floor"), mid = first + half;
    Tensor right = (len > 0) & (v < edges.index_select(0, mid.clamp(0, e - 1))).logical_not();
    first = at::where(right, mid + 1, first);
    len = at::where(len > 0, at::where(right, len - half - 1, half), len);
  }
  Tensor outside = (v < edges[0]) | (edges[e - 1] < v);
  return {first - 1, outside.logical_not()};
}

// hist (the bin counts' shape) from input (M, N): each dimension's bins from `edges` by
// interpolation or by search; the weights (M) of the elements inside all edges added.
void fill(const Tensor& input, at::TensorList edges, bool interpolate, const OptTensor& weight,
          bool density, Tensor& hist) {
  const c10::ScalarType st = input.scalar_type();
  TORCH_CHECK(at::isFloatingType(st) && st != at::kHalf, "\"histogram_cpu\" not implemented for '",
              c10::toString(st), "'");
  const int64_t n = input.size(1);
  Tensor acc = hist.is_contiguous() ? hist : at::zeros(hist.sizes(), hist.options());
  acc.zero_();
  if (input.size(0) > 0 && n > 0) {
    Tensor flat = at::zeros({input.size(0)}, input.options().dtype(at::kLong));
    Tensor inside = at::ones({input.size(0)}, input.options().dtype(at::kBool));
    for (int64_t d = 0; d < n; ++d) {
      const Tensor& e = edges[size_t(d)];
      auto [pos, in] = interpolate ? interpolated_bin(input.select(1, d), e)
                                   : searched_bin(input.select(1, d), e);
      const int64_t last = e.numel() - 1;
      pos = at::where(pos == last, pos - 1, pos).clamp(0, std::max<int64_t>(last - 1, 0));
      flat = flat + pos * acc.stride(d);
      inside = inside & in;
    }
    Tensor w =
        has_weight(weight) ? weight->reshape({-1}) : at::ones({input.size(0)}, input.options());
    acc.view({-1}).scatter_add_(0, flat, at::where(inside, w, at::zeros_like(w)));
  }
  if (density) {
    acc.div_(acc.sum());
    for (int64_t d = 0; d < n; ++d) {
      std::vector<int64_t> shape(size_t(n), 1);
      shape[size_t(d)] = edges[size_t(d)].numel() - 1;
      acc.div_(edges[size_t(d)].diff().reshape(shape));
    }
  }
  if (!acc.is_same(hist)) hist.copy_(acc);
}

Tensor rows_of(const Tensor& self) {
  return self.reshape({self.numel() / std::max<int64_t>(self.size(-1), 1), self.size(-1)});
}

OptTensor flat_weight(const OptTensor& weight) {
  return has_weight(weight) ? OptTensor(weight->reshape({weight->numel()})) : c10::nullopt;
}

// --- histogram (1-d) ---

std::tuple<Tensor&, Tensor&> histogram_ct_out(const Tensor& self, int64_t bins, Range range,
                                              const OptTensor& weight, bool density, Tensor& hist,
                                              Tensor& edges) {
  check_operands("histogram", {self, hist, edges});
  Tensor x = self.reshape({self.numel(), 1});
  OptTensor w = flat_weight(weight);
  prepare_out(x, {bins}, hist, {edges});
  auto [lo, hi] = outer_edges(x, range);
  at::linspace_out(edges, lo[0], hi[0], bins + 1);
  check_inputs(x, {edges}, w);
  fill(x, {edges}, true, w, density, hist);
  return {hist, edges};
}

std::tuple<Tensor, Tensor> histogram_ct(const Tensor& self, int64_t bins, Range range,
                                        const OptTensor& weight, bool density) {
  Tensor hist = empty_loom({0}, self.scalar_type()), edges = empty_loom({0}, self.scalar_type());
  histogram_ct_out(self, bins, range, weight, density, hist, edges);
  return {hist, edges};
}

std::tuple<Tensor&, Tensor&> histogram_edges_out(const Tensor& self, const Tensor& bins,
                                                 const OptTensor& weight, bool density,
                                                 Tensor& hist, Tensor& edges) {
  check_operands("histogram", {self, bins, hist, edges});
  Tensor x = self.reshape({self.numel(), 1});
  OptTensor w = flat_weight(weight);
  check_inputs(x, {bins}, w);
  prepare_out(x, {bins.numel() - 1}, hist, {edges});
  edges.copy_(bins);
  fill(x, {edges}, false, w, density, hist);
  return {hist, edges};
}

std::tuple<Tensor, Tensor> histogram_edges(const Tensor& self, const Tensor& bins,
                                           const OptTensor& weight, bool density) {
  Tensor hist = empty_loom({0}, self.scalar_type()), edges = empty_loom({0}, bins.scalar_type());
  histogram_edges_out(self, bins, weight, density, hist, edges);
  return {hist, edges};
}

// --- histogramdd: input (..., N), a histogram over its last dimension ---

std::vector<Tensor> histogramdd_bin_edges(const Tensor& self, at::IntArrayRef bins, Range range,
                                          const OptTensor& /*weight*/, bool /*density*/) {
  check_operands("histogramdd", {self});
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions");
  const int64_t n = self.size(-1);
  TORCH_CHECK(int64_t(bins.size()) == n, "torch.histogramdd: expected ", n,
              " sequences of bin edges for a ", n, "-dimensional histogram but got ", bins.size());
  auto [lo, hi] = outer_edges(rows_of(self), range);
  std::vector<Tensor> edges;
  for (int64_t d = 0; d < n; ++d) {
    edges.push_back(empty_loom({0}, self.scalar_type()));
    at::linspace_out(edges.back(), lo[size_t(d)], hi[size_t(d)], bins[size_t(d)] + 1);
  }
  return edges;
}

Tensor histogramdd_from_counts(const Tensor& self, at::IntArrayRef bins, Range range,
                               const OptTensor& weight, bool density) {
  std::vector<Tensor> edges = histogramdd_bin_edges(self, bins, range, weight, density);
  check_inputs(self, edges, weight);
  Tensor hist = empty_loom({0}, self.scalar_type());
  prepare_out(self, bins.vec(), hist, edges);
  fill(rows_of(self), edges, true, flat_weight(weight), density, hist);
  return hist;
}

Tensor histogramdd_from_edges(const Tensor& self, at::TensorList bins, const OptTensor& weight,
                              bool density) {
  check_operands("histogramdd", {self});
  check_inputs(self, bins, weight);
  std::vector<int64_t> counts;
  std::vector<Tensor> edges;
  for (const Tensor& b : bins) {
    counts.push_back(b.numel() - 1);
    edges.push_back(empty_loom({0}, b.scalar_type()));
  }
  Tensor hist = empty_loom({0}, self.scalar_type());
  prepare_out(self, counts, hist, edges);
  for (size_t d = 0; d < edges.size(); ++d) edges[d].copy_(bins[d]);
  fill(rows_of(self), edges, false, flat_weight(weight), density, hist);
  return hist;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histogram.bin_ct", histogram_ct);
  m.impl("histogram.bin_ct_out", histogram_ct_out);
  m.impl("histogram.bins_tensor", histogram_edges);
  m.impl("histogram.bins_tensor_out", histogram_edges_out);
  m.impl("_histogramdd_bin_edges", histogramdd_bin_edges);
  m.impl("_histogramdd_from_bin_cts", histogramdd_from_counts);
  m.impl("_histogramdd_from_bin_tensors", histogramdd_from_edges);
}

}  // namespace loom::aten
