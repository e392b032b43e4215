// Fractional max pooling, 2-d and 3-d, forward and backward. Each (n, c) plane's windows start
// at positions drawn from its random samples (one per spatial dim, in [0, 1)), by the CPU's
// formula: start(i) = int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1), and
// in - k for the last window. The starts are data, so the forward gathers its windows and
// reduces them to the maximum and its flat index within the plane, stored together (NOTE
// [Cohorts]); the backward is max pooling's.
#include <ATen/MetaFunctions.h>
#include <torch/library.h>

#include <limits>

#include "aten/resample.h"

namespace loom::aten {

namespace {

using at::IntArrayRef;
using at::Tensor;

// One spatial dim of the pooling.
struct FDim {
  int64_t in, out, pool;
  Tensor sample;  // (N, C) view of the random samples for this dim
};

// The start of the window that output coordinate `o` (Int64) reads along `d`, with `u` the
// plane's sample (already of o's shape): computed in the input's dtype `t` and truncated to
// int, as the CPU does. A sample outside [0, 1) can place a window outside the input; the
// gather's check then faults.
NodeRef window_start(const FDim& d, const NodeRef& o, const NodeRef& u, DType t) {
  const Shape& s = o->shape;
  NodeRef last = int_const(d.in - d.pool, s);
  if (d.out <= 1) return last;
  const double alpha = t == DType::Float32 ? double(float(d.in - d.pool) / float(d.out - 1))
                                           : double(d.in - d.pool) / double(d.out - 1);
  NodeRef a = scalar(alpha, t, s);
  auto to_int = [&](const NodeRef& v) { return cast(cast(v, DType::Int32), DType::Int64); };
  NodeRef start = binary(Op::Sub, to_int(binary(Op::Mul, binary(Op::Add, cast(o, t), u), a)),
                         to_int(binary(Op::Mul, u, a)));
  return where(binary(Op::Eq, o, int_const(d.out - 1, s)), last, start);
}

// The plane's sample for dim d at shape s (N, C, ...): the (N, C) samples broadcast.
NodeRef sample_at(const FDim& d, const Shape& s) {
  Tensor u = d.sample;
  while (size_t(u.dim()) < s.size()) u = u.unsqueeze(-1);
  return expand(read_tensor(u), s);
}

// The CPU's checks of the forward (its meta function), then the dims.
std::vector<FDim> fractional_dims(const char* op, const Tensor& self, IntArrayRef kernel,
                                  IntArrayRef output_size, const Tensor& samples, int k) {
  check_operands(op, {self, samples});
  if (k == 2)
    (void)at::meta::fractional_max_pool2d(to_meta(self), kernel, output_size, to_meta(samples));
  else
    (void)at::meta::fractional_max_pool3d(to_meta(self), kernel, output_size, to_meta(samples));
  // Which dtypes the CPU kernel takes, and how it words a sample dtype unlike the input's,
  // are the running torch's (2.x computes float16 and bfloat16): one table per op.
  static const CpuVerdicts verdicts[2];
  verdicts[k - 2].check(self.scalar_type(), samples.scalar_type(), [&] {
    // one plane of 2 x 2 (x 2) pooled by 1 to 1
    const std::vector<int64_t> ones(size_t(k), 1);
    std::vector<int64_t> is(size_t(k + 2), 2);
    is[0] = is[1] = 1;
    Tensor x = at::ones(is, at::TensorOptions().dtype(self.scalar_type()));
    Tensor u = at::zeros({1, 1, k}, at::TensorOptions().dtype(samples.scalar_type()));
    (k == 2 ? at::fractional_max_pool2d : at::fractional_max_pool3d)(x, ones, ones, u);
  });
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), op, " not implemented for ",
              self.scalar_type());
  TORCH_CHECK(samples.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", samples.scalar_type());
  const bool batch = self.dim() == k + 2;
  const int64_t n = batch ? self.size(0) : 1, c = self.size(batch ? 1 : 0);
  // The CPU reads the samples as a contiguous (N, C, k) array; fewer would be read past.
  TORCH_CHECK(samples.numel() == n * c * k, op, "(): expected random_samples of ", n, " * ", c,
              " * ", k, " elements (batch, planes, spatial dims), but got sizes ", samples.sizes());
  Tensor u = samples.reshape({n, c, k});
  std::vector<FDim> dims;
  for (int i = 0; i < k; ++i) {
    // The 2-d kernel reads sample 0 for the width and 1 for the height; the 3-d one reads
    // them in dim order (time, height, width).
    int which = k == 2 ? 1 - i : i;
    dims.push_back(FDim{self.size(self.dim() - k + i), output_size[size_t(i)], kernel[size_t(i)],
                        u.select(2, which)});
  }
  return dims;
}

std::tuple<Tensor, Tensor> fractional_forward(const char* op, const Tensor& self,
                                              IntArrayRef kernel, IntArrayRef output_size,
                                              const Tensor& samples, int k) {
  std::vector<FDim> dims = fractional_dims(op, self, kernel, output_size, samples, k);
  Shape os(self.sizes().begin(), self.sizes().end() - k);
  for (const FDim& d : dims) os.push_back(d.out);
  Tensor out = empty_loom(os, self.scalar_type()), idx = empty_loom(os, at::kLong);
  if (out.numel() == 0) return {out, idx};
  Tensor x = self.dim() == k + 1 ? self.unsqueeze(0) : self;
  EngineLock lock(engine_mutex());
  const DType t = to_loom(self.scalar_type());
  // Windows at (N, C, O..., J...).
  Shape ws = {x.size(0), x.size(1)};
  for (const FDim& d : dims) ws.push_back(d.out);
  for (const FDim& d : dims) ws.push_back(d.pool);
  std::vector<NodeRef> coord = {iota(DType::Int64, ws, 0), iota(DType::Int64, ws, 1)};
  std::vector<int> axes;
  for (int i = 0; i < k; ++i) {
    const FDim& d = dims[size_t(i)];
    NodeRef start = window_start(d, iota(DType::Int64, ws, 2 + i), sample_at(d, ws), t);
    NodeRef c = binary(Op::Add, start, iota(DType::Int64, ws, 2 + k + i));
    coord.push_back(checked(c, d.in, false, false,
                            std::string(op) + "(): a random sample places a window at " +
                                "{}, outside an input dim of size " + std::to_string(d.in)));
    axes.push_back(2 + k + i);
  }
  NodeRef v = gather_at(x, coord);
  const Shape s(ws.begin(), ws.begin() + 2 + k);
  NodeRef mw = reduce(ReduceKind::Max, v, axes, t);
  NodeRef m = drop_windows(mw, k);
  // Each window element's flat index in its plane, and the CPU's choice among them (NOTE
  // [Max-pool indices by score] in op_util.cpp).
  NodeRef flat_at;
  int64_t plane = 1;
  for (int i = k - 1; i >= 0; --i) {
    NodeRef term = binary(Op::Mul, coord[size_t(2 + i)], int_const(plane, ws));
    flat_at = flat_at ? binary(Op::Add, flat_at, term) : term;
    plane *= dims[size_t(i)].in;
  }
  NodeRef flat = pooling_index(v, constant(Scalar::of_int(1), DType::Bool, ws), flat_at, mw, axes,
                               plane, [k](const NodeRef& r) { return drop_windows(r, k); });
  make_cohort({m, flat});  // the backward reads the indices (NOTE [Cohorts])
  assign(self.dim() == k + 1 ? out.unsqueeze(0) : out, m);
  assign(self.dim() == k + 1 ? idx.unsqueeze(0) : idx, flat);
  return {out, idx};
}

std::tuple<Tensor, Tensor> fractional2d(const Tensor& self, IntArrayRef kernel,
                                        IntArrayRef output_size, const Tensor& samples) {
  return fractional_forward("fractional_max_pool2d", self, kernel, output_size, samples, 2);
}
std::tuple<Tensor, Tensor> fractional3d(const Tensor& self, IntArrayRef kernel,
                                        IntArrayRef output_size, const Tensor& samples) {
  return fractional_forward("fractional_max_pool3d", self, kernel, output_size, samples, 3);
}

// The out= forms: the CPU's structured checks and resizing on meta copies of the outputs,
// then the functional result stored into them.
template <int K>
std::tuple<Tensor&, Tensor&> fractional_out(const Tensor& self, IntArrayRef kernel,
                                            IntArrayRef output_size, const Tensor& samples,
                                            Tensor& out, Tensor& indices) {
  check_operands(K == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d",
                 {self, samples, out, indices});
  Tensor mo = to_meta(out), mi = to_meta(indices);
  if (K == 2)
    at::meta::fractional_max_pool2d_outf(to_meta(self), kernel, output_size, to_meta(samples), mo,
                                         mi);
  else
    at::meta::fractional_max_pool3d_outf(to_meta(self), kernel, output_size, to_meta(samples), mo,
                                         mi);
  auto r = K == 2 ? fractional2d(self, kernel, output_size, samples)
                  : fractional3d(self, kernel, output_size, samples);
  match_out(out, mo);
  match_out(indices, mi);
  EngineLock lock(engine_mutex());
  assign(out, read_tensor(std::get<0>(r)));
  assign(indices, read_tensor(std::get<1>(r)));
  return {out, indices};
}

Tensor fractional_backward(const char* op, const Tensor& grad_out, const Tensor& self,
                           IntArrayRef output_size, const Tensor& indices, int k) {
  check_operands(op, {grad_out, self, indices});
  static const CpuVerdicts verdicts[2];  // as the forward's
  verdicts[k - 2].check(self.scalar_type(), grad_out.scalar_type(), [&] {
    const std::vector<int64_t> ones(size_t(k), 1), one(size_t(k + 2), 1);
    std::vector<int64_t> is(size_t(k + 2), 2);
    is[0] = is[1] = 1;
    Tensor x = at::ones(is, at::TensorOptions().dtype(self.scalar_type()));
    Tensor g = at::ones(one, at::TensorOptions().dtype(grad_out.scalar_type()));
    Tensor i = at::zeros(one, at::TensorOptions().dtype(at::kLong));
    (k == 2 ? at::fractional_max_pool2d_backward : at::fractional_max_pool3d_backward)(g, x, ones,
                                                                                       ones, i);
  });
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), op, " not implemented for ",
              self.scalar_type());
  TORCH_CHECK(output_size.size() == size_t(k), op, ": output_size must have ", k, " elements");
  static const char* names[2][3] = {{"height", "width", ""}, {"time", "height", "width"}};
  for (int i = k - 1; i >= 0; --i)
    TORCH_CHECK(grad_out.dim() == self.dim() &&
                    grad_out.size(grad_out.dim() - k + i) == output_size[size_t(i)],
                op, "(): gradOutput ", names[k - 2][i], " unexpected");
  TORCH_CHECK(indices.sizes() == grad_out.sizes(), op, "(): expected indices of size ",
              grad_out.sizes(), ", but got ", indices.sizes());
  TORCH_CHECK(grad_out.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", grad_out.scalar_type());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type Long but found ",
              indices.scalar_type());
  return max_pool_backward_at(op, grad_out, self, indices, k);
}

Tensor fractional2d_backward(const Tensor& grad_out, const Tensor& self, IntArrayRef kernel,
                             IntArrayRef output_size, const Tensor& indices) {
  (void)kernel;  // unused by the CPU too
  return fractional_backward("fractional_max_pool2d_backward", grad_out, self, output_size, indices,
                             2);
}
Tensor fractional3d_backward(const Tensor& grad_out, const Tensor& self, IntArrayRef kernel,
                             IntArrayRef output_size, const Tensor& indices) {
  (void)kernel;
  return fractional_backward("fractional_max_pool3d_backward_out", grad_out, self, output_size,
                             indices, 3);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fractional_max_pool2d", TORCH_FN(fractional2d));
  m.impl("fractional_max_pool3d", TORCH_FN(fractional3d));
  m.impl("fractional_max_pool2d.output", TORCH_FN(fractional_out<2>));
  m.impl("fractional_max_pool3d.output", TORCH_FN(fractional_out<3>));
  m.impl("fractional_max_pool2d_backward", TORCH_FN(fractional2d_backward));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(fractional3d_backward));
}

}  // namespace loom::aten
