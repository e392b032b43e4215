// Neural-network forward/backward ops that autograd calls: relu's threshold_backward,
// softmax and log_softmax backward, nll_loss and nll_loss2d forward and backward. Each is
// an elementwise or reduction value, so a loss and its gradient fuse with their neighbours.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;


// Writes value into the functional result or into out (resized as PyTorch does).
Tensor& store_result(Tensor& out, const Tensor& meta, const NodeRef& value) {
  match_out(out, meta);
  assign(out, value);
  return out;
}

// --- threshold_backward: 0 where self <= threshold, else grad (a NaN passes it, as on the CPU) ---

NodeRef threshold_backward_value(const Tensor& grad, const Tensor& self, const c10::Scalar& th,
                                 const Tensor& meta) {
  Shape s = shape_of(meta.sizes());
  DType t = to_loom(meta.scalar_type());
  NodeRef x = operand(self, s, t);
  NodeRef drop = binary(Op::Le, x, scalar_node(th, s, t));
  return where(drop, constant(Scalar::of_int(0), t, s), operand(grad, s, t));
}

Tensor threshold_backward_fn(const Tensor& grad, const Tensor& self, const c10::Scalar& th) {
  check_operands("threshold_backward", {grad, self});
  Tensor meta = at::meta::threshold_backward(to_meta(grad), to_meta(self), th);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, threshold_backward_value(grad, self, th, meta));
  return out;
}

Tensor& threshold_backward_out(const Tensor& grad, const Tensor& self, const c10::Scalar& th,
                               Tensor& out) {
  check_operands("threshold_backward", {grad, self, out});
  Tensor meta = at::meta::threshold_backward(to_meta(grad), to_meta(self), th);
  EngineLock g(engine_mutex());
  return store_result(out, meta, threshold_backward_value(grad, self, th, meta));
}

// --- threshold: x where x > threshold, else value ---

NodeRef threshold_value(const Tensor& self, const c10::Scalar& th, const c10::Scalar& value,
                        const Tensor& meta) {
  Shape s = shape_of(meta.sizes());
  DType t = to_loom(meta.scalar_type());
  NodeRef x = operand(self, s, t);
  return where(binary(Op::Gt, x, scalar_node(th, s, t)), x, scalar_node(value, s, t));
}

// The CPU's verdict on threshold's dtype (its kernel has no bool code).
void check_threshold_dtype(c10::ScalarType st) {
  static const CpuVerdicts verdicts;
  verdicts.check(st, [&] { at::threshold(probe_operand(st), 0, 0); });
}

Tensor threshold_fn(const Tensor& self, const c10::Scalar& th, const c10::Scalar& value) {
  check_operands("threshold", {self});
  Tensor meta = at::meta::threshold(to_meta(self), th, value);
  check_threshold_dtype(meta.scalar_type());
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, threshold_value(self, th, value, meta));
  return out;
}

Tensor& threshold_ip(Tensor& self, const c10::Scalar& th, const c10::Scalar& value) {
  check_operands("threshold_", {self});
  Tensor meta = at::meta::threshold(to_meta(self), th, value);
  Tensor m = to_meta(self);
  at::meta::threshold_(m, th, value);
  check_threshold_dtype(meta.scalar_type());
  EngineLock g(engine_mutex());
  assign(self, threshold_value(self, th, value, meta));
  return self;
}

Tensor& threshold_out(const Tensor& self, const c10::Scalar& th, const c10::Scalar& value,
                      Tensor& out) {
  check_operands("threshold", {self, out});
  Tensor meta = at::meta::threshold(to_meta(self), th, value);
  check_threshold_dtype(meta.scalar_type());
  EngineLock g(engine_mutex());
  return store_result(out, meta, threshold_value(self, th, value, meta));
}

// --- softmax / log_softmax backward ---

NodeRef softmax_backward_value(const Tensor& grad, const Tensor& output, int64_t dim, bool log,
                               DType result) {
  Tensor g = grad.dim() == 0 ? grad.reshape({1}) : grad;
  Tensor o = output.dim() == 0 ? output.reshape({1}) : output;
  Shape s = shape_of(g.sizes());
  DType acc = acc_of(to_loom(o.scalar_type()));
  std::vector<int> axis{int(at::maybe_wrap_dim(dim, g.dim()))};
  NodeRef gv = cast(read_tensor(g), acc), ov = cast(read_tensor(o), acc);
  NodeRef r;
  if (log) {
    NodeRef sum = expand(reduce(ReduceKind::Sum, gv, axis, acc), s);
    r = binary(Op::Sub, gv, binary(Op::Mul, unary(Op::Exp, ov), sum));
  } else {
    NodeRef sum = expand(reduce(ReduceKind::Sum, binary(Op::Mul, gv, ov), axis, acc), s);
    r = binary(Op::Mul, ov, binary(Op::Sub, gv, sum));
  }
  r = cast(r, result);
  if (grad.dim() == 0) r = reindex(r, {}, IndexMap{{0}, {}, {}});
  return r;
}

template <bool kLog>
Tensor softmax_backward_fn(const Tensor& grad, const Tensor& output, int64_t dim,
                           c10::ScalarType input_dtype) {
  check_operands("softmax_backward", {grad, output});
  Tensor meta =
      kLog ? at::meta::_log_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype)
           : at::meta::_softmax_backward_data(to_meta(grad), to_meta(output), dim, input_dtype);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, softmax_backward_value(grad, output, dim, kLog, to_loom(meta.scalar_type())));
  return out;
}

template <bool kLog>
Tensor& softmax_backward_out(const Tensor& grad, const Tensor& output, int64_t dim,
                             c10::ScalarType input_dtype, Tensor& out) {
  Tensor r = softmax_backward_fn<kLog>(grad, output, dim, input_dtype);
  at::native::resize_output(out, r.sizes());
  EngineLock g(engine_mutex());
  assign(out, read_tensor(r));
  return out;
}

// --- nll_loss ---

// Per-sample target (Int64, of the target's shape: {n} for nll_loss, {n, h, w} for
// nll_loss2d), its weight, and the target made safe to index with (ignored entries point
// at class 0), for self of shape (n, c, ...).
struct NllTerms {
  NodeRef target, weight, safe;
};

NllTerms nll_terms(const Tensor& self, const Tensor& target, const c10::optional<Tensor>& weight,
                   int64_t ignore_index, DType t) {
  const int64_t c = self.size(1);
  const Shape s = shape_of(target.sizes());
  NodeRef tg = cast(read_tensor(target), DType::Int64);
  NodeRef ignored = binary(Op::Eq, tg, int_const(ignore_index, s));
  NodeRef safe = where(ignored, int_const(0, s), tg);
  safe = checked_now(target, safe, c, false, true, "Target {} is out of bounds.", ignore_index);
  NodeRef w = constant(Scalar::of_int(1), t, s);
  if (weight.has_value() && weight->defined()) {
    Tensor wt = weight->is_contiguous() ? *weight : weight->contiguous();
    NodeRef at = binary(Op::Add, int_const(wt.storage_offset(), s),
                        binary(Op::Mul, safe, int_const(wt.stride(0), s)));
    w = cast(gather(buffer_of(wt), to_loom(wt.scalar_type()), at), t);
  }
  w = where(ignored, constant(Scalar::of_int(0), t, s), w);
  return {tg, w, safe};
}

Tensor as_2d(const Tensor& self) { return self.dim() == 1 ? self.unsqueeze(0) : self; }
Tensor as_1d_target(const Tensor& target) { return target.dim() == 0 ? target.unsqueeze(0) : target; }

// The element of self (n, c, d...) at each sample's class: coordinates over the target's
// shape (n, d...).
std::vector<NodeRef> picked_coords(const Shape& s, const NodeRef& cls) {
  std::vector<NodeRef> coord{iota(DType::Int64, s, 0), cls};
  for (int d = 1; d < int(s.size()); ++d) coord.push_back(iota(DType::Int64, s, d));
  return coord;
}

// A value over all of the target's shape, reduced to a scalar.
NodeRef sum_all(const NodeRef& v, const Shape& s, DType acc) {
  std::vector<int> axes(s.size());
  for (size_t d = 0; d < s.size(); ++d) axes[d] = int(d);
  return reindex(reduce(ReduceKind::Sum, v, axes, acc), {}, IndexMap{Shape(s.size(), 0), {}, {}});
}

void nll_loss_forward_into(const Tensor& self, const Tensor& target,
                           const c10::optional<Tensor>& weight, int64_t reduction,
                           int64_t ignore_index, Tensor& output, Tensor& total_weight) {
  Tensor x = as_2d(self), tgt = as_1d_target(target);
  DType t = to_loom(self.scalar_type()), acc = acc_of(t);
  EngineLock g(engine_mutex());
  if (tgt.numel() == 0 || x.size(1) == 0) {
    assign(total_weight, constant(Scalar::of_int(0), t, {}));
    if (output.numel() > 0)
      assign(output, constant(reduction == at::Reduction::Mean ? Scalar::of_float(NAN)
                                                               : Scalar::of_int(0),
                              t, shape_of(output.sizes())));
    return;
  }
  NllTerms terms = nll_terms(x, tgt, weight, ignore_index, acc);
  const Shape s = shape_of(tgt.sizes());
  // self[i, target_i, ...]
  NodeRef picked = cast(gather(buffer_of(x), t, storage_index(x, picked_coords(s, terms.safe))), acc);
  NodeRef loss = binary(Op::Mul, unary(Op::Neg, picked), terms.weight);
  if (reduction == at::Reduction::None && self.dim() >= 2) {  // the CPU leaves the total 0
    assign(total_weight, constant(Scalar::of_int(0), t, {}));
    assign(output, cast(loss, t));
    return;
  }
  NodeRef total = sum_all(terms.weight, s, acc);
  assign(total_weight, cast(total, t));
  NodeRef sum = sum_all(loss, s, acc);
  if (reduction == at::Reduction::Mean) sum = binary(Op::Div, sum, total);
  if (reduction == at::Reduction::None) sum = reindex(cast(loss, acc), {}, IndexMap{{0}, {}, {}});
  assign(output, cast(sum, t));
}

std::tuple<Tensor, Tensor> nll_loss_forward_fn(const Tensor& self, const Tensor& target,
                                               const c10::optional<Tensor>& weight,
                                               int64_t reduction, int64_t ignore_index) {
  check_operands("nll_loss", {self, target});
  auto meta = at::meta::nll_loss_forward(to_meta(self), to_meta(target), to_meta(weight), reduction,
                                         ignore_index);
  Tensor output = result_like(std::get<0>(meta)), total = result_like(std::get<1>(meta));
  nll_loss_forward_into(self, target, weight, reduction, ignore_index, output, total);
  return {output, total};
}

std::tuple<Tensor&, Tensor&> nll_loss_forward_out(const Tensor& self, const Tensor& target,
                                                  const c10::optional<Tensor>& weight,
                                                  int64_t reduction, int64_t ignore_index,
                                                  Tensor& output, Tensor& total_weight) {
  check_operands("nll_loss", {self, target, output, total_weight});
  auto meta = at::meta::nll_loss_forward(to_meta(self), to_meta(target), to_meta(weight), reduction,
                                         ignore_index);
  at::native::resize_output(output, std::get<0>(meta).sizes());
  at::native::resize_output(total_weight, std::get<1>(meta).sizes());
  nll_loss_forward_into(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

// d loss / d self[i, j] = -w_i * g_i where j == target_i, else 0; g is grad_output, over
// total_weight for mean.
void nll_loss_backward_into(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                            const c10::optional<Tensor>& weight, int64_t reduction,
                            int64_t ignore_index, const Tensor& total_weight, Tensor& grad_input) {
  if (grad_input.numel() == 0) return;
  Tensor gi = as_2d(grad_input), x = as_2d(self), tgt = as_1d_target(target);
  DType t = to_loom(grad_input.scalar_type()), acc = acc_of(t);
  EngineLock g(engine_mutex());
  NllTerms terms = nll_terms(x, tgt, weight, ignore_index, acc);
  const Shape s = shape_of(tgt.sizes()), s2 = shape_of(x.sizes());
  NodeRef go;
  if (reduction == at::Reduction::None && self.dim() >= 2)
    go = cast(read_tensor(grad_output), acc);
  else
    go = cast(expand(read_tensor(grad_output.reshape({})), s), acc);
  if (reduction == at::Reduction::Mean)
    go = binary(Op::Div, go, cast(expand(read_tensor(total_weight.reshape({})), s), acc));
  NodeRef per = binary(Op::Mul, unary(Op::Neg, terms.weight), go);  // the target's shape
  // (n, c, d...) -> (n, d...): every dim but the class dim
  IndexMap rows{Shape(s.size(), 0), {0, -1}, {1, 0}};
  for (int d = 1; d < int(s.size()); ++d) {
    rows.dim_of.push_back(d);
    rows.mult.push_back(1);
  }
  NodeRef col = iota(DType::Int64, s2, 1);
  NodeRef hit = binary(Op::Eq, col, reindex(terms.safe, s2, rows));
  NodeRef v = where(hit, reindex(per, s2, rows), constant(Scalar::of_int(0), acc, s2));
  write_tensor(gi, cast(v, t));
}

Tensor nll_loss_backward_fn(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                            const c10::optional<Tensor>& weight, int64_t reduction,
                            int64_t ignore_index, const Tensor& total_weight) {
  check_operands("nll_loss_backward", {grad_output, self, target, total_weight});
  Tensor meta =
      at::meta::nll_loss_backward(to_meta(grad_output), to_meta(self), to_meta(target),
                                  to_meta(weight), reduction, ignore_index, to_meta(total_weight));
  Tensor out = result_like(meta);
  nll_loss_backward_into(grad_output, self, target, weight, reduction, ignore_index, total_weight, out);
  return out;
}

Tensor& nll_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const c10::optional<Tensor>& weight, int64_t reduction,
                              int64_t ignore_index, const Tensor& total_weight, Tensor& out) {
  check_operands("nll_loss_backward", {grad_output, self, target, total_weight, out});
  Tensor meta =
      at::meta::nll_loss_backward(to_meta(grad_output), to_meta(self), to_meta(target),
                                  to_meta(weight), reduction, ignore_index, to_meta(total_weight));
  at::native::resize_output(out, meta.sizes());
  nll_loss_backward_into(grad_output, self, target, weight, reduction, ignore_index, total_weight, out);
  return out;
}

// --- nll_loss2d: self (n, c, h, w), target (n, h, w); the same terms over the target's shape ---

void check_nll2d(const Tensor& input, const Tensor& target, const c10::optional<Tensor>& weight,
                 bool backward) {
  TORCH_CHECK(target.dim() == 3,
              "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
              target.dim());
  TORCH_CHECK(input.dim() == 4,
              "only batches of spatial inputs supported (4D tensors), but got input of dimension: ",
              input.dim());
  const bool weighted = weight.has_value() && weight->defined();
  TORCH_CHECK(!weighted || weight->numel() == input.size(1),
              "weight tensor should be defined either for all or no classes");
  TORCH_CHECK(input.size(0) == target.size(0) && input.size(2) == target.size(1) &&
                  input.size(3) == target.size(2),
              "size mismatch (got input: ", input.sizes(), " , target: ", target.sizes());
  const auto st = input.scalar_type();
  // The dtypes of the running torch's kernels (2.x added float16), on one pixel.
  auto pixel = [&] { return at::zeros({1, 1, 1, 1}, at::TensorOptions().dtype(st)); };
  auto target0 = [] { return at::zeros({1, 1, 1}, at::kLong); };
  auto one = [&] { return at::ones({}, at::TensorOptions().dtype(st)); };
  if (!backward)
    LOOM_CPU_VERDICT(st, c10::ScalarType::Undefined, at::nll_loss2d(pixel(), target0()));
  else
    LOOM_CPU_VERDICT(
        st, c10::ScalarType::Undefined,
        at::nll_loss2d_backward(one(), pixel(), target0(), {}, at::Reduction::Mean, -100, one()));
  TORCH_CHECK(!weighted || weight->scalar_type() == st, "expected scalar type ", st,
              " but found ", weight->scalar_type());
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
}

Tensor fresh(const Tensor& like, at::IntArrayRef sizes) {
  return result_like(at::empty(sizes, like.options().device(at::kMeta)));
}

std::tuple<Tensor, Tensor> nll_loss2d_forward_fn(const Tensor& self, const Tensor& target,
                                                 const c10::optional<Tensor>& weight,
                                                 int64_t reduction, int64_t ignore_index) {
  check_operands("nll_loss2d", {self, target});
  check_nll2d(self, target, weight, false);
  Tensor output = reduction == at::Reduction::None ? fresh(self, target.sizes()) : fresh(self, {});
  Tensor total = fresh(self, {});
  nll_loss_forward_into(self, target, weight, reduction, ignore_index, output, total);
  return {output, total};
}

std::tuple<Tensor&, Tensor&> nll_loss2d_forward_out(const Tensor& self, const Tensor& target,
                                                    const c10::optional<Tensor>& weight,
                                                    int64_t reduction, int64_t ignore_index,
                                                    Tensor& output, Tensor& total_weight) {
  check_operands("nll_loss2d", {self, target, output, total_weight});
  check_nll2d(self, target, weight, false);
  total_weight.resize_({});
  if (reduction == at::Reduction::None)
    at::native::resize_output(output, target.sizes());
  else
    at::native::resize_output(output, {});
  nll_loss_forward_into(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

void check_nll2d_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                          const c10::optional<Tensor>& weight, int64_t reduction,
                          const Tensor& total_weight) {
  check_nll2d(self, target, weight, true);
  TORCH_CHECK(total_weight.numel() == 1,
              "expected total_weight to be a single element tensor, got: ", total_weight.sizes(),
              " (", total_weight.numel(), " elements)");
  if (reduction == at::Reduction::None) {
    TORCH_CHECK(grad_output.dim() == 3,
                "grad_output must have same dimension as target (3) but got dimension: ",
                grad_output.sizes());
    TORCH_CHECK(grad_output.sizes() == target.sizes(), "size mismatch (got grad_output: ",
                grad_output.sizes(), " target: ", target.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() <= 1 && grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
}

Tensor nll_loss2d_backward_fn(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const c10::optional<Tensor>& weight, int64_t reduction,
                              int64_t ignore_index, const Tensor& total_weight) {
  check_operands("nll_loss2d_backward", {grad_output, self, target, total_weight});
  check_nll2d_backward(grad_output, self, target, weight, reduction, total_weight);
  Tensor out = fresh(self, self.sizes());
  nll_loss_backward_into(grad_output, self, target, weight, reduction, ignore_index, total_weight, out);
  return out;
}

Tensor& nll_loss2d_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                const c10::optional<Tensor>& weight, int64_t reduction,
                                int64_t ignore_index, const Tensor& total_weight, Tensor& out) {
  check_operands("nll_loss2d_backward", {grad_output, self, target, total_weight, out});
  check_nll2d_backward(grad_output, self, target, weight, reduction, total_weight);
  out.resize_as_(self);
  TORCH_CHECK(out.is_contiguous(), "grad_input must be contiguous");
  nll_loss_backward_into(grad_output, self, target, weight, reduction, ignore_index, total_weight, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("threshold", TORCH_FN(threshold_fn));
  m.impl("threshold_", TORCH_FN(threshold_ip));
  m.impl("threshold.out", TORCH_FN(threshold_out));
  m.impl("threshold_backward", TORCH_FN(threshold_backward_fn));
  m.impl("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_backward_fn<false>));
  m.impl("_softmax_backward_data.out", TORCH_FN(softmax_backward_out<false>));
  m.impl("_log_softmax_backward_data", TORCH_FN(softmax_backward_fn<true>));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(softmax_backward_out<true>));
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward_fn));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward_fn));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward_fn));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward_fn));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
}

}  // namespace loom::aten
