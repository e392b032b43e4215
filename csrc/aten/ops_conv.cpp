// Convolution (1-d, 2-d, 3-d; stride, padding, dilation, groups) forward and backward,
// as PyTorch reaches a PrivateUse1 device: convolution_overrideable and
// convolution_backward_overrideable. Float32 convolutions are oneDNN extern calls
// (runtime/conv.h) where Loom was built with it. Otherwise the patches of the zero-padded
// input are a strided view of it (im2col is a copy of that view); products are the BLAS
// extern calls of ops_linalg.cpp, batched over (sample, group); the input gradient adds
// patch gradients back with a gather or a scatter. Transposed convolution swaps the
// forward and input-gradient paths.
#include <ATen/Parallel.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/op_util.h"
#include "aten/torch_compat.h"
#include "core/extern.h"
#include "runtime/conv.h"

namespace loom::aten {

namespace {

using at::IntArrayRef;
using at::Tensor;

struct ConvGeometry {
  int64_t n, c, oc, groups, spatial;
  std::vector<int64_t> in, kernel, out, stride, padding, dilation;
  int64_t cg() const { return c / groups; }
  int64_t ocg() const { return oc / groups; }
  int64_t kernel_numel() const { return numel(kernel); }
  int64_t out_numel() const { return numel(out); }
};

std::vector<int64_t> expand_param(IntArrayRef p, int64_t d, const char* name) {
  TORCH_CHECK(p.size() == 1 || int64_t(p.size()) == d, "expected ", name, " to be a single integer value or a list of ", d, " values to match the convolution dimensions, but got ", name, "=", p);
  std::vector<int64_t> r;
  for (int64_t i = 0; i < d; ++i) r.push_back(p.size() == 1 ? p[0] : p[size_t(i)]);
  return r;
}

// Geometry of a (non-transposed) convolution of `input` (N, C, S...) with `weight`
// (OC, C/groups, K...); raises PyTorch's errors for shapes that do not fit.
ConvGeometry geometry(const Tensor& input, const Tensor& weight, IntArrayRef stride,
                      IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  TORCH_CHECK(input.dim() >= 3 && input.dim() <= 5, "Expected 3D, 4D or 5D input to convolution, but got input of size: ", input.sizes());
  TORCH_CHECK(weight.dim() == input.dim(), "Expected ", input.dim(), "-dimensional weight for ", input.dim(), "-dimensional input ", input.sizes(), ", but got ", weight.dim(), "-dimensional weight of size ", weight.sizes());
  TORCH_CHECK(groups > 0, "non-positive groups is not supported");
  ConvGeometry g;
  g.spatial = input.dim() - 2;
  g.n = input.size(0);
  g.c = input.size(1);
  g.oc = weight.size(0);
  g.groups = groups;
  g.stride = expand_param(stride, g.spatial, "stride");
  g.padding = expand_param(padding, g.spatial, "padding");
  g.dilation = expand_param(dilation, g.spatial, "dilation");
  for (int64_t s : g.stride) TORCH_CHECK(s > 0, "non-positive stride is not supported");
  for (int64_t p : g.padding) TORCH_CHECK(p >= 0, "negative padding is not supported");
  TORCH_CHECK(g.c == weight.size(1) * groups, "Given groups=", groups, ", weight of size ", weight.sizes(), ", expected input", input.sizes(), " to have ", weight.size(1) * groups, " channels, but got ", g.c, " channels instead");
  TORCH_CHECK(g.oc % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  for (int64_t i = 0; i < g.spatial; ++i) {
    g.in.push_back(input.size(2 + i));
    g.kernel.push_back(weight.size(2 + i));
    int64_t span = g.dilation[size_t(i)] * (g.kernel.back() - 1) + 1;
    int64_t padded = g.in.back() + 2 * g.padding[size_t(i)];
    TORCH_CHECK(padded >= span, "Calculated padded input size per channel: (", padded, "). Kernel size: (", span, "). Kernel size can't be greater than actual input size");
    g.out.push_back((padded - span) / g.stride[size_t(i)] + 1);
  }
  return g;
}

Shape with(std::initializer_list<int64_t> head, const std::vector<int64_t>& tail) {
  Shape s(head);
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

Tensor padded_input(const Tensor& input, const ConvGeometry& g) {
  std::vector<int64_t> pads;
  for (int64_t i = g.spatial; i-- > 0;) pads.insert(pads.end(), {g.padding[size_t(i)], g.padding[size_t(i)]});
  bool any = std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; });
  return (any ? at::constant_pad_nd(input, pads, 0) : input).contiguous();
}

// The patches of the padded input as a view (N, G, C/G, K..., O...) of its storage.
Tensor patches(const Tensor& padded, const ConvGeometry& g) {
  Shape sizes = with({g.n, g.groups, g.cg()}, g.kernel);
  sizes.insert(sizes.end(), g.out.begin(), g.out.end());
  Shape strides{padded.stride(0), g.cg() * padded.stride(1), padded.stride(1)};
  for (int64_t i = 0; i < g.spatial; ++i) strides.push_back(g.dilation[size_t(i)] * padded.stride(2 + i));
  for (int64_t i = 0; i < g.spatial; ++i) strides.push_back(g.stride[size_t(i)] * padded.stride(2 + i));
  return padded.as_strided(sizes, strides, padded.storage_offset());
}

// im2col: (N, G, C/G * prod(K), prod(O)).
Tensor columns(const Tensor& input, const ConvGeometry& g) {
  return patches(padded_input(input, g), g).reshape({g.n, g.groups, g.cg() * g.kernel_numel(), g.out_numel()});
}

// (G, OC/G, C/G * prod(K)) view of the weight.
Tensor weight_matrix(const Tensor& weight, const ConvGeometry& g) {
  return weight.reshape({g.groups, g.ocg(), g.cg() * g.kernel_numel()});
}

NodeRef with_leading_one(const NodeRef& v) {
  Shape s{1};
  s.insert(s.end(), v->shape.begin(), v->shape.end());
  IndexMap m;
  m.offs.assign(v->shape.size(), 0);
  m.dim_of.push_back(-1);
  m.mult.push_back(0);
  for (size_t j = 0; j < v->shape.size(); ++j) {
    m.dim_of.push_back(int(j));
    m.mult.push_back(1);
  }
  return reindex(v, s, m);
}

NodeRef transposed_last(const NodeRef& v) {
  Shape s = v->shape;
  size_t r = s.size();
  std::swap(s[r - 1], s[r - 2]);
  IndexMap m;
  m.offs.assign(r, 0);
  for (size_t j = 0; j < r; ++j) {
    m.dim_of.push_back(int(j == r - 1 ? r - 2 : j == r - 2 ? r - 1 : j));
    m.mult.push_back(1);
  }
  return reindex(v, s, m);
}

// Whether oneDNN runs this convolution: float32, nothing empty.
bool library_conv(const ConvGeometry& g, c10::ScalarType dtype) {
  if (dtype != at::kFloat || !conv_library_available()) return false;
  if (g.n == 0 || g.c == 0 || g.oc == 0) return false;
  return std::all_of(g.out.begin(), g.out.end(), [](int64_t o) { return o > 0; });
}

ConvDims dims_of(const ConvGeometry& g) {
  return {g.n, g.c, g.oc, g.groups, g.in, g.kernel, g.out, g.stride, g.padding, g.dilation};
}

// Whether oneDNN can read a view as it lies: each element once, dims in any order
// (contiguous, channels-last, a transposed contiguous tensor).
bool dense_view(const View& v) {
  std::vector<size_t> dims;
  for (size_t i = 0; i < v.sizes.size(); ++i)
    if (v.sizes[i] != 1) dims.push_back(i);
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return v.strides[a] < v.strides[b]; });
  int64_t expect = 1;
  for (size_t i : dims) {
    if (v.strides[i] != expect) return false;
    expect *= v.sizes[i];
  }
  return true;
}

// A dense view's strides, its size-1 dims (whose strides can be anything) placed in a
// dense order too: each just outside the first dim after it in index order, so a
// contiguous or channels-last view of one image reads as plain NCHW or NHWC. (A stride of 1
// for them made oneDNN see the batch dim innermost, and its reorder of a 32x32x32 result
// to that layout took 0.1-0.18 ms against the convolution's 0.01.)
std::vector<int64_t> dense_strides(const View& v) {
  std::vector<size_t> order;  // outermost first
  for (size_t i = 0; i < v.sizes.size(); ++i)
    if (v.sizes[i] != 1) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return v.strides[a] > v.strides[b]; });
  for (size_t i = 0; i < v.sizes.size(); ++i)
    if (v.sizes[i] == 1)
      order.insert(std::find_if(order.begin(), order.end(), [i](size_t d) { return d > i; }), i);
  std::vector<int64_t> s(v.sizes.size());
  int64_t next = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    s[*it] = next;
    next *= v.sizes[*it];
  }
  return s;
}

enum class LibraryConv { Forward, BackwardData, BackwardWeights };

// One oneDNN call on float32 operands into `out`, a fresh dense tensor (its strides are
// the layout oneDNN writes): Forward (x, w[, bias]) -> y, BackwardData (dy, w) -> dx,
// BackwardWeights (x, dy) -> dw.
void library_conv_into(LibraryConv kind, const ConvGeometry& g, std::vector<NodeRef> inputs,
                       const Tensor& out) {
  auto call = std::make_shared<ExternCall>();
  static const char* names[] = {"conv", "conv_backward_data", "conv_backward_weights"};
  call->name = names[int(kind)];
  call->out_nbytes = {out.numel() * int64_t(sizeof(float))};
  call->accepts = [](size_t, const View& v) { return dense_view(v); };
  const ConvDims d = dims_of(g);
  const View target{shape_of(out.sizes()), std::vector<int64_t>(out.strides().begin(), out.strides().end()), 0};
  const std::vector<int64_t> written = dense_strides(target);
  call->fn = [kind, d, written](const std::vector<ExternInput>& in,
                                const std::vector<std::shared_ptr<Memory>>& res) {
    auto at = [&](size_t i) { return static_cast<const float*>(in[i].mem->data) + in[i].view.offset; };
    auto strides = [&](size_t i) { return dense_strides(in[i].view); };
    auto* y = static_cast<float*>(res[0]->data);
    if (kind == LibraryConv::Forward)
      conv_forward_f32(d, {strides(0), strides(1), written}, at(0), at(1), in.size() > 2 ? at(2) : nullptr, y);
    else if (kind == LibraryConv::BackwardData)
      conv_backward_data_f32(d, {written, strides(1), strides(0)}, at(0), at(1), y);
    else
      conv_backward_weights_f32(d, {strides(0), written, strides(1)}, at(0), at(1), y);
  };
  for (NodeRef& v : inputs) v = cast(v, DType::Float32);
  NodeRef flat = extern_call(call, std::move(inputs))[0];
  issue_library_call(flat);
  assign_result(out, make_node(Op::Load, DType::Float32, target.sizes, {flat}, target));
}

// NOTE [Convolution memory format]: results (output, input and weight gradients) are laid
// out as the CPU's convolution backend lays out its own. torch 1.13: channels-last for a 2-d
// convolution, not transposed, whose input or weight is channels-last. torch 2.x: its slow 2-d
// backends and its oneDNN one all keep a channels-last input's or weight's layout, transposed
// or not; for 3-d only oneDNN keeps channels-last-3d, and which backend runs depends on the
// dtype and on use_mkldnn's size heuristics (cpu_convolves_with_onednn). A backend without
// such a rule (NNPACK) gives contiguous results.
struct ConvCall {
  const Tensor& input;
  const Tensor& weight;
  bool transposed;
  IntArrayRef stride, dilation, output_padding;
  int64_t groups;
};

#if LOOM_TORCH_AT_LEAST(2, 0)
// Whether the running torch's CPU computes convolutions of a reduced float with oneDNN (its
// bf16/fp16 device checks: the machine's instructions): one tiny channels-last-3d convolution
// decides, once per dtype.
bool cpu_onednn_computes(c10::ScalarType st) {
  auto probe = [](c10::ScalarType t) {
    try {
      Tensor x = at::zeros({1, 2, 2, 2, 2}, at::TensorOptions().dtype(t))
                     .contiguous(at::MemoryFormat::ChannelsLast3d);
      Tensor w = at::zeros({2, 2, 1, 1, 1}, at::TensorOptions().dtype(t));
      Tensor y = at::convolution(x, w, {}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, false, {0, 0, 0}, 1);
      return !y.is_contiguous() && y.is_contiguous(at::MemoryFormat::ChannelsLast3d);
    } catch (const c10::Error&) {
      return false;
    }
  };
  static const bool bf16 = probe(at::kBFloat16), half = probe(at::kHalf);
  return st == at::kBFloat16 ? bf16 : st == at::kHalf && half;
}

bool any_of(const std::vector<int64_t>& v, bool (*pred)(int64_t)) {
  return std::any_of(v.begin(), v.end(), pred);
}

// torch 2.x's ConvParams::use_mkldnn for a CPU convolution of these operands.
bool cpu_convolves_with_onednn(const ConvCall& c) {
  if (!at::globalContext().userEnabledMkldnn()) return false;
  const int64_t d = c.input.dim() - 2;
  auto s = expand_param(c.stride, d, "stride"), dl = expand_param(c.dilation, d, "dilation");
  if (c.transposed) {
    auto op = expand_param(c.output_padding, d, "output_padding");
    for (int64_t i = 0; i < d; ++i)
      if (op[size_t(i)] >= s[size_t(i)]) return false;  // output padding past the stride
  }
  const c10::ScalarType st = c.input.scalar_type();
  if (st == at::kBFloat16 || st == at::kHalf) return cpu_onednn_computes(st);
  if (st != at::kFloat) return false;
  const int64_t n = c.input.size(0), kw = c.weight.size(-1), kh = c.weight.size(-2);
  const bool strided = any_of(s, [](int64_t v) { return v != 1; });
  const bool dilated = any_of(dl, [](int64_t v) { return v != 1; });
  // 1x1 kernels of small batches on one thread go to the slow backend; so do small inputs.
  const bool not_1x1_alone =
      strided || dilated || n >= 16 || kw != 1 || kh != 1 || at::get_num_threads() > 1;
  const bool big_enough = c.groups > 1 || (kw > 3 && kh > 3) || n > 1 ||
                          n * c.input.size(1) * c.input.size(2) * c.input.size(3) > 20480;
  return not_1x1_alone && big_enough;
}

// torch 2.x's ConvParams::use_nnpack (float32 2-d forward only, where the build has NNPACK).
bool cpu_convolves_with_nnpack(const ConvCall& c) {
  const int64_t d = c.input.dim() - 2;
  auto dl = expand_param(c.dilation, d, "dilation");
  const bool need_backward = at::GradMode::is_enabled() &&
                             (c.input.requires_grad() || c.weight.requires_grad());
  return !need_backward && at::globalContext().userEnabledNNPACK() && at::_nnpack_available() &&
         c.input.scalar_type() == at::kFloat && d == 2 && !c.transposed &&
         !any_of(dl, [](int64_t v) { return v != 1; }) && c.weight.size(2) < 17 &&
         c.weight.size(3) < 17 && c.input.size(0) >= 16;
}
#endif

at::MemoryFormat result_format(const ConvCall& c) {
  const auto cl = at::MemoryFormat::ChannelsLast;
  auto either = [&](at::MemoryFormat f) {
    return c.input.suggest_memory_format() == f || c.weight.suggest_memory_format() == f;
  };
#if LOOM_TORCH_AT_LEAST(2, 0)
  if (c.input.dim() == 4 && either(cl)) {
    const bool nnpack = !cpu_convolves_with_onednn(c) && cpu_convolves_with_nnpack(c);
    return nnpack ? at::MemoryFormat::Contiguous : cl;
  }
  const auto cl3 = at::MemoryFormat::ChannelsLast3d;
  if (c.input.dim() == 5 && either(cl3) && cpu_convolves_with_onednn(c)) return cl3;
  return at::MemoryFormat::Contiguous;
#else
  return c.input.dim() == 4 && !c.transposed && either(cl) ? cl : at::MemoryFormat::Contiguous;
#endif
}

// The strides the CPU gives a result of format f, size-1 dims included.
std::vector<int64_t> format_strides(c10::IntArrayRef sizes, at::MemoryFormat f) {
  if (f == at::MemoryFormat::ChannelsLast) return c10::get_channels_last_strides_2d(sizes);
  if (f == at::MemoryFormat::ChannelsLast3d) return c10::get_channels_last_strides_3d(sizes);
  const auto strides = c10::contiguous_strides(sizes);
  return {strides.begin(), strides.end()};
}

Tensor empty_in(c10::IntArrayRef sizes, c10::ScalarType dtype, at::MemoryFormat f) {
  return empty_loom(sizes, format_strides(sizes, f), dtype);
}

// t laid out in format f with exactly the CPU's strides (a copy where they differ, if only in
// a size-1 dim: .contiguous(f) keeps those).
Tensor in_format(const Tensor& t, at::MemoryFormat f) {
  if (t.strides() == c10::IntArrayRef(format_strides(t.sizes(), f))) return t;
  return empty_in(t.sizes(), t.scalar_type(), f).copy_(t);
}

// y = conv(x, w) (+ bias): (N, OC, O...).
Tensor conv_forward(const Tensor& input, const Tensor& weight, const c10::optional<Tensor>& bias,
                    const ConvGeometry& g, at::MemoryFormat format) {
  if (library_conv(g, input.scalar_type())) {
    Tensor out = empty_in(with({g.n, g.oc}, g.out), input.scalar_type(), format);
    EngineLock lock(engine_mutex());
    std::vector<NodeRef> in{read_tensor(input), read_tensor(weight)};
    if (bias.has_value() && bias->defined()) in.push_back(read_tensor(*bias));
    library_conv_into(LibraryConv::Forward, g, std::move(in), out);
    return out;
  }
  Tensor cols = columns(input, g);
  Tensor wm = weight_matrix(weight, g);
  Tensor out = empty_loom(with({g.n, g.oc}, g.out), input.scalar_type());
  if (out.numel() == 0) return in_format(out, format);
  EngineLock lock(engine_mutex());
  DType t = to_loom(input.scalar_type());
  NodeRef y = product(with_leading_one(read_tensor(wm)), read_tensor(cols), t);  // (N, G, OCg, O)
  // out is contiguous: write through its (N, G, OCg, prod O) view.
  Tensor target = out.view({g.n, g.groups, g.ocg(), g.out_numel()});
  if (bias.has_value() && bias->defined())
    y = binary(Op::Add, y, operand(bias->view({1, g.groups, g.ocg(), 1}), shape_of(target.sizes()), t));
  assign(target, y);
  return in_format(out, format);
}

// NOTE [Input gradient as a gather]: the input gradient of a convolution adds each patch
// gradient (a column of w^T @ dy) back where the patch came from. As a scatter that runs
// in order on one thread. With stride 1 the sum is a gather instead: input position y
// takes column entry (k, o = y + p - k * d) for every kernel offset k with o in range, an
// affine read per k, so the whole gradient is one parallel reduction over k. The columns
// come from BLAS in rows with margins of zeros (product_rows_with_margin) wide enough that
// every shifted read stays inside its own row: positions out of range along the first
// spatial dim land in the zeros, and the other dims are masked, since there a read out
// of range would wrap onto a neighbouring row of the same column.
bool gather_input_grad(const ConvGeometry& g, DType t) {
  return blas_dtype(t) && std::all_of(g.stride.begin(), g.stride.end(), [](int64_t s) { return s == 1; });
}

Tensor conv_input_grad_gather(const Tensor& grad_out, const Tensor& weight, const ConvGeometry& g,
                              c10::ScalarType dtype) {
  const DType t = to_loom(dtype);
  const size_t sp = size_t(g.spatial);
  Tensor grad_in = empty_loom(with({g.n, g.c}, g.in), dtype);
  Tensor gy = grad_out.reshape({g.n, g.groups, g.ocg(), g.out_numel()});
  Tensor wm = weight_matrix(weight, g);
  // Row-major strides of output positions and kernel offsets; the widest shift.
  std::vector<int64_t> os(sp), ks(sp);
  int64_t margin = 0;
  for (size_t i = sp, so = 1, sk = 1; i-- > 0;) {
    os[i] = so, ks[i] = sk;
    so *= g.out[i], sk *= g.kernel[i];
    margin += g.dilation[i] * (g.kernel[i] - 1) * os[i];
  }
  const int64_t row = g.out_numel() + 2 * margin, kk = g.kernel_numel();
  EngineLock lock(engine_mutex());
  NodeRef wt = with_leading_one(transposed_last(read_tensor(wm)));  // (1, G, CgK, OCg)
  NodeRef flat = product_rows_with_margin(wt, read_tensor(gy), t, margin);
  // (N, G, Cg, K..., I...): the column entry of kernel offset k that lands on input y.
  Shape shape = with({g.n, g.groups, g.cg()}, g.kernel);
  shape.insert(shape.end(), g.in.begin(), g.in.end());
  View v{shape, {g.groups * g.cg() * kk * row, g.cg() * kk * row, kk * row}, margin};
  for (size_t i = 0; i < sp; ++i) v.strides.push_back(ks[i] * row - g.dilation[i] * os[i]);
  for (size_t i = 0; i < sp; ++i) {
    v.strides.push_back(os[i]);
    v.offset += g.padding[i] * os[i];
  }
  NodeRef val = make_node(Op::Load, t, shape, {flat}, v);
  NodeRef ok;
  for (size_t i = 1; i < sp; ++i) {
    NodeRef o = binary(Op::Sub, binary(Op::Add, iota(DType::Int64, shape, int(3 + sp + i)), int_const(g.padding[i], shape)),
                       binary(Op::Mul, iota(DType::Int64, shape, int(3 + i)), int_const(g.dilation[i], shape)));
    NodeRef in = binary(Op::LogicalAnd, binary(Op::Ge, o, int_const(0, shape)),
                        binary(Op::Lt, o, int_const(g.out[i], shape)));
    ok = ok ? binary(Op::LogicalAnd, ok, in) : in;
  }
  if (ok) val = where(ok, val, constant(Scalar::of_int(0), t, shape));
  std::vector<int> axes;
  for (size_t i = 0; i < sp; ++i) axes.push_back(int(3 + i));
  NodeRef sum = reduce(ReduceKind::Sum, val, axes, t);  // (N, G, Cg, 1..., I...)
  Shape out_shape = with({g.n, g.groups, g.cg()}, g.in);
  IndexMap drop{Shape(shape.size(), 0), {0, 1, 2}, {1, 1, 1}};
  for (size_t i = 0; i < sp; ++i) {
    drop.dim_of.push_back(int(3 + sp + i));
    drop.mult.push_back(1);
  }
  assign(grad_in.view(out_shape), reindex(sum, out_shape, drop));
  return grad_in;
}

// dL/dx of conv: the patch gradients w^T @ dy added back into the padded input.
Tensor conv_input_grad(const Tensor& grad_out, const Tensor& weight, const ConvGeometry& g,
                       c10::ScalarType dtype, at::MemoryFormat format) {
  if (library_conv(g, dtype)) {
    Tensor grad_in = empty_in(with({g.n, g.c}, g.in), dtype, format);
    EngineLock lock(engine_mutex());
    library_conv_into(LibraryConv::BackwardData, g, {read_tensor(grad_out), read_tensor(weight)}, grad_in);
    return grad_in;
  }
  if (grad_out.numel() > 0 && weight.numel() > 0 && gather_input_grad(g, to_loom(dtype)))
    return in_format(conv_input_grad_gather(grad_out, weight, g, dtype), format);
  Shape padded_shape{g.n, g.c};
  for (int64_t i = 0; i < g.spatial; ++i) padded_shape.push_back(g.in[size_t(i)] + 2 * g.padding[size_t(i)]);
  Tensor grad_padded = at::zeros(padded_shape, grad_out.options().dtype(dtype));
  if (grad_out.numel() > 0 && weight.numel() > 0) {
    Tensor gy = grad_out.reshape({g.n, g.groups, g.ocg(), g.out_numel()});
    Tensor wm = weight_matrix(weight, g);
    Tensor dcols = empty_loom({g.n, g.groups, g.cg() * g.kernel_numel(), g.out_numel()}, dtype);
    {
      EngineLock lock(engine_mutex());
      NodeRef wt = with_leading_one(transposed_last(read_tensor(wm)));  // (1, G, CgK, OCg)
      assign(dcols, product(wt, read_tensor(gy), to_loom(dtype)));
    }
    // Where each patch element lies in the padded input: its row-major index there.
    Tensor where_in = patches(at::arange(grad_padded.numel(), grad_out.options().dtype(at::kLong))
                                  .view(padded_shape), g);
    grad_padded.put_(where_in.reshape({-1}), dcols.reshape({-1}), /*accumulate=*/true);
  }
  Tensor grad_in = grad_padded;
  for (int64_t i = 0; i < g.spatial; ++i)
    grad_in = grad_in.narrow(2 + i, g.padding[size_t(i)], g.in[size_t(i)]);
  return in_format(grad_in, format);
}

// dL/dw of conv: sum over samples of dy @ cols^T.
Tensor conv_weight_grad(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                        const ConvGeometry& g, at::MemoryFormat format) {
  if (library_conv(g, weight.scalar_type())) {
    Tensor gw = empty_in(weight.sizes(), weight.scalar_type(), format);
    EngineLock lock(engine_mutex());
    library_conv_into(LibraryConv::BackwardWeights, g, {read_tensor(input), read_tensor(grad_out)}, gw);
    return gw;
  }
  Tensor gw = empty_loom(weight.sizes(), weight.scalar_type());
  if (gw.numel() == 0) return in_format(gw, format);
  Tensor cols = columns(input, g);
  Tensor gy = grad_out.reshape({g.n, g.groups, g.ocg(), g.out_numel()});
  EngineLock lock(engine_mutex());
  DType t = to_loom(weight.scalar_type());
  NodeRef per = product(read_tensor(gy), transposed_last(read_tensor(cols)), t);  // (N, G, OCg, CgK)
  DType acc = is_reduced_float(t) ? DType::Float32 : t;
  NodeRef sum = reduce(ReduceKind::Sum, cast(per, acc), {0}, acc);
  Shape gshape{g.groups, g.ocg(), g.cg() * g.kernel_numel()};
  sum = reindex(sum, gshape, IndexMap{{0, 0, 0, 0}, {1, 2, 3}, {1, 1, 1}});
  assign(gw.view(gshape), cast(sum, t));
  return in_format(gw, format);
}

// Rows a transposed convolution's output_padding adds past a multiple of its stride: the
// convolution it transposes maps the output to that many more input rows, all zero.
std::vector<int64_t> extra_rows(IntArrayRef output_padding, IntArrayRef stride, int64_t d) {
  auto s = expand_param(stride, d, "stride"), op = expand_param(output_padding, d, "output_padding");
  std::vector<int64_t> extra(size_t(d), 0);
  for (int64_t i = 0; i < d; ++i) extra[size_t(i)] = op[size_t(i)] / s[size_t(i)];
  return extra;
}

// t with `extra[i]` zero rows appended to spatial dim i.
Tensor pad_end(const Tensor& t, const std::vector<int64_t>& extra) {
  if (std::all_of(extra.begin(), extra.end(), [](int64_t e) { return e == 0; })) return t;
  std::vector<int64_t> pads;
  for (size_t i = extra.size(); i-- > 0;) pads.insert(pads.end(), {0, extra[i]});
  return at::constant_pad_nd(t, pads, 0);
}

Tensor convolution(const Tensor& input, const Tensor& weight, const c10::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  check_operands("convolution", {input, weight});
  const at::MemoryFormat format =
      result_format({input, weight, transposed, stride, dilation, output_padding, groups});
  if (!transposed)
    return conv_forward(input, weight, bias, geometry(input, weight, stride, padding, dilation, groups),
                        format);
  // A transposed convolution is the input gradient of the convolution it transposes:
  // weight (C_in, OC/G, K...) maps OC channels to C_in, and the output size solves it.
  const int64_t d = input.dim() - 2;
  auto s = expand_param(stride, d, "stride"), p = expand_param(padding, d, "padding");
  auto dl = expand_param(dilation, d, "dilation"), op = expand_param(output_padding, d, "output_padding");
  Shape out_shape{input.size(0), weight.size(1) * groups};
  for (int64_t i = 0; i < d; ++i)
    out_shape.push_back((input.size(2 + i) - 1) * s[size_t(i)] - 2 * p[size_t(i)] +
                        dl[size_t(i)] * (weight.size(2 + i) - 1) + op[size_t(i)] + 1);
  Tensor like = at::empty(out_shape, input.options().device(at::kMeta));
  ConvGeometry g = geometry(like, weight, stride, padding, dilation, groups);
  Tensor x = pad_end(input, extra_rows(output_padding, stride, d));
  TORCH_CHECK(g.out == std::vector<int64_t>(x.sizes().begin() + 2, x.sizes().end()),
              "convolution_overrideable: transposed output size does not invert the convolution");
  Tensor out = conv_input_grad(x, weight, g, input.scalar_type(), format);
  if (bias.has_value() && bias->defined()) {
    Shape bshape(size_t(out.dim()), 1);
    bshape[1] = bias->size(0);
    out = out + bias->view(bshape);
  }
  return out;
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, IntArrayRef stride,
    IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> mask) {
  check_operands("convolution_backward", {grad_out, input, weight});
  Tensor gi, gw, gb;
  const at::MemoryFormat f =
      result_format({input, weight, transposed, stride, dilation, output_padding, groups});
  if (!transposed) {
    ConvGeometry g = geometry(input, weight, stride, padding, dilation, groups);
    if (mask[0]) gi = conv_input_grad(grad_out, weight, g, input.scalar_type(), f);
    if (mask[1]) gw = conv_weight_grad(grad_out, input, weight, g, f);
  } else {
    // y = conv_T(x, w) means x-shaped = conv(y-shaped, w): roles of input and grad swap.
    // Rows that output_padding adds past the stride pair with zero input rows.
    ConvGeometry g = geometry(grad_out, weight, stride, padding, dilation, groups);
    const auto extra = extra_rows(output_padding, stride, input.dim() - 2);
    if (mask[0]) {
      gi = conv_forward(grad_out, weight, c10::nullopt, g, f);
      for (int64_t i = 2; i < input.dim(); ++i) gi = gi.narrow(i, 0, input.size(i));
      gi = in_format(gi, f);
    }
    if (mask[1]) gw = conv_weight_grad(pad_end(input, extra), grad_out, weight, g, f);
  }
  if (mask[2]) {
    std::vector<int64_t> dims{0};
    for (int64_t i = 2; i < grad_out.dim(); ++i) dims.push_back(i);
    gb = grad_out.sum(dims);
  }
  return {gi, gw, gb};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace loom::aten
