// Selection and search: median and nanmedian (values and indices picked from a stable
// sort, which gives the CPU's indices: its comparators break ties by index),
// cummax/cummin (two scans), searchsorted/bucketize and isin (counts and matches over
// every boundary, one fused reduction), aminmax, histc, histogram, bincount.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/pointwise.h"

namespace loom::aten {

namespace {

using at::Tensor;

void check_reduced_dim(const Tensor& self, int64_t dim, const char* fn) {
  if (self.dim() == 0) return;
  TORCH_CHECK_INDEX(self.size(dim) != 0, fn, ": Expected reduction dim ", dim,
                    " to have non-zero size.");
}

void set_output(Tensor& out, const Tensor& value) {
  at::native::resize_output(out, value.sizes());
  out.copy_(value);
}

// The entries at position `pos` (a keepdim-shaped Int64 tensor, or one position for every
// row when `pos` is undefined and `k` is given) of each row along `dim` sorted ascending
// (NaN last, equal keys in index order), with their indices.
void pick_sorted(const Tensor& self, int64_t dim, bool keepdim, const Tensor& pos, int64_t k,
                 Tensor& values, Tensor& indices) {
  Tensor in = self.dim() == 0 ? self.unsqueeze(0) : self;
  auto [sv, si] = at::sort(in, /*stable=*/true, dim, /*descending=*/false);
  Tensor v = pos.defined() ? sv.gather(dim, pos) : sv.narrow(dim, k, 1);
  Tensor i = pos.defined() ? si.gather(dim, pos) : si.narrow(dim, k, 1);
  if (!keepdim || self.dim() == 0) {
    v = v.squeeze(dim);
    i = i.squeeze(dim);
  }
  set_output(values, v);
  set_output(indices, i);
}

// Where each row's median lies in its ascending sort: (n - 1) / 2, or for median the first
// NaN (NaN sorts last, so at n - nans) when the row has one; nanmedian takes the middle of
// the numbers, (n - nans - 1) / 2, truncated (0 when all are NaN).
Tensor median_position(const Tensor& in, int64_t dim, bool ignore_nan) {
  const int64_t n = in.size(dim);
  Tensor nans = at::isnan(in).sum(dim, /*keepdim=*/true);
  if (ignore_nan) return at::div(n - nans - 1, 2, "trunc");
  return at::where(nans > 0, n - nans, at::full_like(nans, (n - 1) / 2));
}

std::tuple<Tensor&, Tensor&> median_dim_values(const Tensor& self, int64_t dim, bool keepdim,
                                               Tensor& values, Tensor& indices, bool ignore_nan) {
  const char* name = ignore_nan ? "nanmedian" : "median";
  check_operands(name, {self, values, indices});
  dim = c10::maybe_wrap_dim(dim, self.dim());
  check_reduced_dim(self, dim, "median()");
  at::checkScalarType("median", {indices, "indices", 1}, at::kLong);
  at::checkSameType("median", {values, "values", 0}, {self, "self", 2});
  check_kernel_dtype("median_out", self.scalar_type(), kFloat | kIntegral);
  Tensor in = self.dim() == 0 ? self.unsqueeze(0) : self;
  pick_sorted(self, dim, keepdim, median_position(in, dim, ignore_nan), 0, values, indices);
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
  check_operands(ignore_nan ? "nanmedian" : "median", {self});
  check_kernel_dtype("median_cpu", self.scalar_type(), kFloat | kIntegral);
  if (self.numel() == 0)
    return at::full({}, std::numeric_limits<float>::quiet_NaN()).to(self.options());
  Tensor flat = self.reshape({-1});
  Tensor sorted = std::get<0>(at::sort(flat, /*stable=*/true, 0, /*descending=*/false));
  return sorted.gather(0, median_position(flat, 0, ignore_nan)).reshape({});
}
Tensor median_fn(const Tensor& self) { return median_all(self, false); }
Tensor nanmedian_fn(const Tensor& self) { return median_all(self, true); }

// --- cummax / cummin: the running extreme is one scan (NaN sticks); its index is where the
// running value was last taken, a second scan (max) over the positions where x is NaN or
// equals it (the CPU's >= / <= hands ties to the later element) ---

template <bool kMax>
void cum_extreme(const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
  check_operands(kMax ? "cummax" : "cummin", {self, values, indices});
  check_kernel_dtype(kMax ? "cummax_cpu" : "cummin_cpu", self.scalar_type(),
                     kFloat | kIntegral | kBool);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  EngineLock g(engine_mutex());
  if (self.dim() == 0 || self.numel() == 0) {
    assign(values, read_tensor(self));
    assign(indices, constant(Scalar::of_int(0), DType::Int64, shape_of(indices.sizes())));
    return;
  }
  const Shape shape = shape_of(self.sizes());
  NodeRef x = read_tensor(self);
  Tensor run = empty_loom(self.sizes(), self.scalar_type());  // a scan is stored whole
  write_tensor(run, scan(kMax ? ReduceKind::Max : ReduceKind::Min, x, int(dim)));
  NodeRef taken = binary(Op::Eq, x, read_tensor(run));
  if (is_floating(x->dtype)) taken = binary(Op::LogicalOr, taken, unary(Op::IsNan, x));
  NodeRef at = where(taken, iota(DType::Int64, shape, int(dim)), int_const(-1, shape));
  Tensor idx = empty_loom(self.sizes(), at::kLong);
  write_tensor(idx, scan(ReduceKind::Max, at, int(dim)));
  assign(values, read_tensor(run));
  assign(indices, read_tensor(idx));
}
void cummax_helper(const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
  cum_extreme<true>(self, values, indices, dim);
}
void cummin_helper(const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
  cum_extreme<false>(self, values, indices, dim);
}

// --- searchsorted / bucketize: the position is how many boundaries of the row test
// below the value, !(b >= v) (left) or !(b > v) (right), the CPU's binary-search test;
// over sorted boundaries that is the binary search's answer ---

Tensor& searchsorted_into(const Tensor& seq, const Tensor& self, bool out_int32, bool right,
                          c10::optional<c10::string_view> side,
                          const c10::optional<Tensor>& sorter_opt, Tensor& out) {
  check_operands("searchsorted", {seq, self, out});
  const Tensor sorter = sorter_opt.has_value() ? *sorter_opt : Tensor();
  at::native::searchsorted_pre_check(seq, self, out, out_int32, right, side, sorter);
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  const bool is_right = side ? *side == "right" : right;
  Tensor b = sorter.defined() ? seq.gather(-1, sorter) : seq;
  Tensor v = self.unsqueeze(-1);
  if (seq.dim() > 1) b = b.unsqueeze(-2);
  Tensor below = at::logical_not(is_right ? at::gt(b, v) : at::ge(b, v));
  out.copy_(below.sum(-1));
  return out;
}
Tensor searchsorted_fn(const Tensor& seq, const Tensor& self, bool out_int32, bool right,
                       c10::optional<c10::string_view> side, const c10::optional<Tensor>& sorter) {
  Tensor out = empty_loom({0}, out_int32 ? at::kInt : at::kLong);
  return searchsorted_into(seq, self, out_int32, right, side, sorter, out);
}
Tensor searchsorted_scalar(const Tensor& seq, const c10::Scalar& self, bool out_int32, bool right,
                           c10::optional<c10::string_view> side,
                           const c10::optional<Tensor>& sorter) {
  return searchsorted_fn(seq, at::native::searchsorted_scalar_tensor(self, seq.device()), out_int32,
                         right, side, sorter);
}

Tensor& bucketize_into(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right,
                       Tensor& out) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
  return searchsorted_into(boundaries, self, out_int32, right, c10::nullopt, c10::nullopt, out);
}
Tensor bucketize_fn(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  Tensor out = empty_loom({0}, out_int32 ? at::kInt : at::kLong);
  return bucketize_into(self, boundaries, out_int32, right, out);
}
Tensor bucketize_scalar(const c10::Scalar& self, const Tensor& boundaries, bool out_int32,
                        bool right) {
  return bucketize_fn(at::native::searchsorted_scalar_tensor(self, boundaries.device()), boundaries,
                      out_int32, right);
}

// --- isin: any test element equal to the element (NaN equals nothing) ---

Tensor& isin_into(const Tensor& elements, const Tensor& test, bool invert, Tensor& out) {
  Tensor hit = at::eq(elements.unsqueeze(-1), test.reshape({-1})).any(-1);
  out.copy_(invert ? at::logical_not(hit) : hit);
  return out;
}
Tensor& isin_tt_out(const Tensor& elements, const Tensor& test, bool assume_unique, bool invert,
                    Tensor& out) {
  check_operands("isin", {elements, test, out});
  Tensor mo = to_meta(out);
  at::isin_outf(to_meta(elements), to_meta(test), assume_unique, invert, mo);
  match_out(out, mo);
  return isin_into(elements, test, invert, out);
}
Tensor isin_tt(const Tensor& elements, const Tensor& test, bool assume_unique, bool invert) {
  check_operands("isin", {elements, test});
  Tensor out = result_like(at::isin(to_meta(elements), to_meta(test), assume_unique, invert));
  return isin_into(elements, test, invert, out);
}
Tensor& isin_ts_out(const Tensor& elements, const c10::Scalar& test, bool assume_unique,
                    bool invert, Tensor& out) {
  return isin_tt_out(elements, at::scalar_tensor(test, elements.options()), assume_unique, invert,
                     out);
}
Tensor isin_ts(const Tensor& elements, const c10::Scalar& test, bool assume_unique, bool invert) {
  return isin_tt(elements, at::scalar_tensor(test, elements.options()), assume_unique, invert);
}
Tensor& isin_st_out(const c10::Scalar& element, const Tensor& test, bool assume_unique, bool invert,
                    Tensor& out) {
  return isin_tt_out(at::scalar_tensor(element, test.options()), test, assume_unique, invert, out);
}
Tensor isin_st(const c10::Scalar& element, const Tensor& test, bool assume_unique, bool invert) {
  return isin_tt(at::scalar_tensor(element, test.options()), test, assume_unique, invert);
}

// --- aminmax: amin and amax, shaped as the meta result ---

std::tuple<Tensor&, Tensor&> aminmax_out(const Tensor& self, c10::optional<int64_t> dim,
                                         bool keepdim, Tensor& min, Tensor& max) {
  check_operands("aminmax", {self, min, max});
  Tensor mmin = to_meta(min), mmax = to_meta(max);
  at::aminmax_outf(to_meta(self), dim, keepdim, mmin, mmax);
  match_out(min, mmin);
  match_out(max, mmax);
  if (dim && keepdim && self.dim() == 0) {  // the CPU resizes these to one element
    at::native::resize_output(min, {1});
    at::native::resize_output(max, {1});
  }
  if (dim) {
    min.copy_(at::amin(self, *dim, keepdim).reshape(min.sizes()));
    max.copy_(at::amax(self, *dim, keepdim).reshape(max.sizes()));
  } else {
    min.copy_(at::amin(self).reshape(min.sizes()));
    max.copy_(at::amax(self).reshape(max.sizes()));
  }
  return {min, max};
}
std::tuple<Tensor, Tensor> aminmax_fn(const Tensor& self, c10::optional<int64_t> dim,
                                      bool keepdim) {
  check_operands("aminmax", {self});
  auto meta = at::aminmax(to_meta(self), dim, keepdim);
  Tensor min = result_like(std::get<0>(meta)), max = result_like(std::get<1>(meta));
  aminmax_out(self, dim, keepdim, min, max);
  return {min, max};
}

// --- histc: bins of equal width over [min, max] (the data's range when min == max), each
// element's bin as the CPU's linear interpolation computes it in the input's dtype; the
// right edge belongs to the last bin ---

Tensor& histc_into(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max,
                   Tensor& hist) {
  check_operands("histc", {self, hist});
  TORCH_CHECK(self.dtype() == hist.dtype(), "torch.histogram: input tensor and hist tensor should",
              " have the same dtype, but got input ", self.dtype(), " and hist ", hist.dtype());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  at::native::resize_output(hist, {bins});
  double lo = min.to<double>(), hi = max.to<double>();
  if (lo == hi && self.numel() > 0) {  // the data's own range: realized here, as on the CPU
    auto extrema = at::aminmax(self);
    lo = std::get<0>(extrema).item<double>();
    hi = std::get<1>(extrema).item<double>();
  }
  if (lo == hi) lo -= 1, hi += 1;
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)),
              "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  check_kernel_dtype("histogram_cpu", self.scalar_type(), kFloat);
  hist.zero_();
  if (self.numel() == 0) return hist;
  Tensor x = self.reshape({-1});
  Tensor left = at::scalar_tensor(lo, self.options()),
         right = at::scalar_tensor(hi, self.options());
  // The CPU's range test lets NaN through, and its position, (int64) NaN scaled by the bin
  // stride, wraps to bin 0 there; NaN is counted in bin 0 here too.
  Tensor inside = at::logical_or(at::logical_and(x >= left, x <= right), at::isnan(x));
  Tensor pos =
      ((x - left) / (right - left) * bins).nan_to_num(0).clamp(0, double(bins)).to(at::kLong);
  pos = at::where(pos == bins, at::full_like(pos, bins - 1), pos);
  hist.scatter_add_(0, pos, inside.to(self.scalar_type()));
  return hist;
}
Tensor histc_fn(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  Tensor hist = empty_loom({0}, self.scalar_type());
  return histc_into(self, bins, min, max, hist);
}

// --- histogram (1-d): each element's bin among the edges (the last bin takes its right
// edge), then its weight (or 1) added to the bin: a scatter-add. With a bin count the
// edges are linspace over the range (the data's, read here as the CPU does) and the bin
// comes from linear interpolation checked against its neighbouring edges; with explicit
// edges, from a search. Elements outside the edges (and NaN) count nowhere. ---

void check_histogram(const Tensor& x, const Tensor& edges, const c10::optional<Tensor>& weight) {
  TORCH_CHECK(x.dtype() == edges.dtype(), "torch.histogramdd: input tensor and bins tensors should",
              " have the same dtype, but got input with dtype ", x.dtype(),
              " and bins for dimension 0 with dtype ", edges.dtype());
  TORCH_CHECK(edges.dim() == 1, "torch.histogramdd: bins tensor should have one dimension,",
              " but got ", edges.dim(), " dimensions in the bins tensor for dimension 0");
  TORCH_CHECK(edges.numel() > 0, "torch.histogramdd: bins tensor should have at least 1 element,",
              " but got ", edges.numel(), " elements in the bins tensor for dimension 0");
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(x.dtype() == weight->dtype(), "torch.histogramdd: if weight tensor is provided,",
                " input tensor and weight tensor should have the same dtype, but got input(",
                x.dtype(), "), and weight(", weight->dtype(), ")");
    std::vector<int64_t> ws = weight->sizes().vec();
    if (ws.empty()) ws = {1};
    TORCH_CHECK(ws == std::vector<int64_t>{x.size(0)},
                "torch.histogramdd: if weight tensor is provided it should have the same shape as",
                " the input tensor excluding its innermost dimension, but got input with shape ",
                x.sizes(), " and weight with shape ", weight->sizes());
  }
}

void prepare_histogram(const Tensor& x, int64_t bins, Tensor& hist, Tensor& edges) {
  TORCH_CHECK(x.dtype() == hist.dtype(), "torch.histogram: input tensor and hist tensor should",
              " have the same dtype, but got input ", x.dtype(), " and hist ", hist.dtype());
  TORCH_CHECK(x.dtype() == edges.dtype(),
              "torch.histogram: input tensor and bin_edges tensor should",
              " have the same dtype, but got input ", x.dtype(), " and bin_edges ", edges.dtype(),
              " for dimension 0");
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  at::native::resize_output(edges, {bins + 1});
  at::native::resize_output(hist, {bins});
}

// Fills hist from x (M, 1) and its edges: `pos` gives each element's edge index, `inside`
// whether it counts.
void fill_histogram(const Tensor& x, const Tensor& edges, const Tensor& pos, const Tensor& inside,
                    const c10::optional<Tensor>& weight, bool density, Tensor& hist) {
  const c10::ScalarType st = x.scalar_type();
  TORCH_CHECK(at::isFloatingType(st) && st != at::kHalf, "\"histogram_cpu\" not implemented for '",
              c10::toString(st), "'");
  const int64_t e = edges.numel();
  Tensor v = x.reshape({-1});
  Tensor bin = at::where(pos == e - 1, pos - 1, pos).clamp(0, std::max<int64_t>(e - 2, 0));
  Tensor w = weight.has_value() && weight->defined() ? weight->reshape({-1}) : at::ones_like(v);
  hist.zero_();
  if (v.numel() > 0) hist.scatter_add_(0, bin, at::where(inside, w, at::zeros_like(w)));
  if (density) {
    hist.div_(hist.sum());
    hist.div_(edges.diff());
  }
}

std::tuple<Tensor&, Tensor&> histogram_ct_out(const Tensor& self, int64_t bins,
                                              c10::optional<at::ArrayRef<double>> range,
                                              const c10::optional<Tensor>& weight, bool density,
                                              Tensor& hist, Tensor& edges) {
  check_operands("histogram", {self, hist, edges});
  Tensor x = self.reshape({self.numel(), 1});
  prepare_histogram(x, bins, hist, edges);
  double lo = 0, hi = 1;
  if (range.has_value()) {
    TORCH_CHECK(range->size() == 2, "torch.histogramdd: for a 1-dimensional histogram",
                " range should have 2 elements, but got ", range->size());
    lo = (*range)[0];
    hi = (*range)[1];
  } else if (x.numel() > 0) {
    const c10::ScalarType st = x.scalar_type();
    TORCH_CHECK(st == at::kFloat || st == at::kDouble, "\"histogramdd\" not implemented for '",
                c10::toString(st), "'");
    auto extrema = at::aminmax(x);  // realized here, as on the CPU
    lo = std::get<0>(extrema).item<double>();
    hi = std::get<1>(extrema).item<double>();
  }
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension 0's range [",
              lo, ", ", hi, "] is not finite");
  TORCH_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo, " max ",
              hi, " for dimension 0");
  if (lo == hi) lo -= 0.5, hi += 0.5;
  at::linspace_out(edges, lo, hi, bins + 1);
  check_histogram(x, edges,
                  weight.has_value() && weight->defined()
                      ? c10::optional<Tensor>(weight->reshape({weight->numel()}))
                      : c10::nullopt);
  // The CPU's interpolated bin, then the last of its neighbouring edges at or below the value.
  Tensor v = x.reshape({-1});
  Tensor first = edges[0], last = edges[bins];
  Tensor guess = at::where((v >= first) & (v <= last),
                           ((v - first) / (last - first) * double(bins)), at::zeros_like(v))
                     .to(at::kLong);
  Tensor lo_pos = (guess - 1).clamp_min(0), hi_pos = (guess + 2).clamp_max(bins + 1);
  Tensor pos = lo_pos - 1;
  for (int k = -1; k <= 1; ++k) {
    Tensor at_k = guess + k;
    Tensor edge = edges.index_select(0, at_k.clamp(0, bins));
    pos = pos + ((at_k >= lo_pos) & (at_k < hi_pos) & (edge <= v)).to(at::kLong);
  }
  // NaN counts nowhere (the CPU's bin for it is undefined).
  fill_histogram(x, edges, pos, (v >= first) & (v <= last), weight, density, hist);
  return {hist, edges};
}

std::tuple<Tensor, Tensor> histogram_ct(const Tensor& self, int64_t bins,
                                        c10::optional<at::ArrayRef<double>> range,
                                        const c10::optional<Tensor>& weight, bool density) {
  Tensor hist = empty_loom({0}, self.scalar_type()), edges = empty_loom({0}, self.scalar_type());
  histogram_ct_out(self, bins, range, weight, density, hist, edges);
  return {hist, edges};
}

std::tuple<Tensor&, Tensor&> histogram_edges_out(const Tensor& self, const Tensor& bins,
                                                 const c10::optional<Tensor>& weight, bool density,
                                                 Tensor& hist, Tensor& edges) {
  check_operands("histogram", {self, bins, hist, edges});
  Tensor x = self.reshape({self.numel(), 1});
  c10::optional<Tensor> w = weight.has_value() && weight->defined()
                                ? c10::optional<Tensor>(weight->reshape({weight->numel()}))
                                : c10::nullopt;
  check_histogram(x, bins, w);
  prepare_histogram(x, bins.numel() - 1, hist, edges);
  edges.copy_(bins);
  // The CPU's binary search (std::upper_bound) step by step, so that edges out of order
  // give its answer too: the first edge above the value, less one.
  Tensor v = x.reshape({-1});
  const int64_t e = edges.numel();
  Tensor first = at::zeros_like(v, at::kLong), len = at::full_like(v, e, at::kLong);
  for (int64_t left = e; left > 0; left /= 2) {
    Tensor half = at::div(len, 2, "floor"), mid = first + half;
    Tensor right = (len > 0) & (v < edges.index_select(0, mid.clamp(0, e - 1))).logical_not();
    first = at::where(right, mid + 1, first);
    len = at::where(len > 0, at::where(right, len - half - 1, half), len);
  }
  // Only values below the first edge or above the last are skipped: NaN counts.
  Tensor outside = (v < edges[0]) | (edges[e - 1] < v);
  fill_histogram(x, edges, first - 1, outside.logical_not(), weight, density, hist);
  return {hist, edges};
}

std::tuple<Tensor, Tensor> histogram_edges(const Tensor& self, const Tensor& bins,
                                           const c10::optional<Tensor>& weight, bool density) {
  Tensor hist = empty_loom({0}, self.scalar_type()), edges = empty_loom({0}, bins.scalar_type());
  histogram_edges_out(self, bins, weight, density, hist, edges);
  return {hist, edges};
}

// --- bincount: the number of bins is the data's maximum plus one (read here, as on the
// CPU, which realizes the input); the counts or weight sums are a scatter-add, which adds
// in input order, as the CPU's loop does ---

Tensor bincount_fn(const Tensor& self, const c10::optional<Tensor>& weights, int64_t minlength) {
  const bool weighted = weights.has_value() && weights->defined();
  if (weighted)
    check_operands("bincount", {self, *weights});
  else
    check_operands("bincount", {self});
  const c10::ScalarType st = self.scalar_type();
  TORCH_CHECK(at::isIntegralType(st, /*includeBool=*/false),
              "\"bincount_cpu\" not implemented for '", c10::toString(st), "'");
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  if (self.dim() == 1 && self.numel() == 0)
    return at::zeros({minlength}, self.options().dtype(at::kLong));
  TORCH_CHECK(self.dim() == 1 && self.numel() > 0 && at::min(self).item<int64_t>() >= 0,
              "bincount only supports 1-d non-negative integral inputs.");
  TORCH_CHECK(!weighted || (weights->dim() == 1 && weights->size(0) == self.size(0)),
              "weights should be 1-d and have the same length as input");
  const int64_t bins = std::max(at::max(self).item<int64_t>() + 1, minlength);
  // Float weights sum in float; any other weights in double.
  const c10::ScalarType out_type = !weighted                              ? at::kLong
                                   : weights->scalar_type() == at::kFloat ? at::kFloat
                                                                          : at::kDouble;
  Tensor out = at::zeros({bins}, self.options().dtype(out_type));
  Tensor add =
      weighted ? weights->to(out_type) : at::ones({self.size(0)}, self.options().dtype(at::kLong));
  return out.scatter_add_(0, self.to(at::kLong), add);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("bincount", bincount_fn);
  m.impl("histogram.bin_ct", histogram_ct);
  m.impl("histogram.bin_ct_out", histogram_ct_out);
  m.impl("histogram.bins_tensor", histogram_edges);
  m.impl("histogram.bins_tensor_out", histogram_edges_out);
  m.impl("median", median_fn);
  m.impl("median.dim_values", median_out);
  m.impl("nanmedian", nanmedian_fn);
  m.impl("nanmedian.dim_values", nanmedian_out);
  m.impl("_cummax_helper", cummax_helper);
  m.impl("_cummin_helper", cummin_helper);
  m.impl("searchsorted.Tensor", searchsorted_fn);
  m.impl("searchsorted.Tensor_out", searchsorted_into);
  m.impl("searchsorted.Scalar", searchsorted_scalar);
  m.impl("bucketize.Tensor", bucketize_fn);
  m.impl("bucketize.Tensor_out", bucketize_into);
  m.impl("bucketize.Scalar", bucketize_scalar);
  m.impl("isin.Tensor_Tensor", isin_tt);
  m.impl("isin.Tensor_Tensor_out", isin_tt_out);
  m.impl("isin.Tensor_Scalar", isin_ts);
  m.impl("isin.Tensor_Scalar_out", isin_ts_out);
  m.impl("isin.Scalar_Tensor", isin_st);
  m.impl("isin.Scalar_Tensor_out", isin_st_out);
  m.impl("aminmax", aminmax_fn);
  m.impl("histc", histc_fn);
  m.impl("histc.out", histc_into);
  m.impl("aminmax.out", aminmax_out);
}

}  // namespace loom::aten
