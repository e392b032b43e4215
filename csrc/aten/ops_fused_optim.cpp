// torch 2.x's fused optimizer steps (`torch.optim.Adam(..., fused=True)`, AdamW, SGD,
// Adagrad): _fused_adam_, _fused_adamw_, _fused_sgd_ and _fused_adagrad_ update every
// parameter and its state in place. PyTorch has them for CPU and CUDA only; on Loom they
// ran through the CPU fallback (each list copied out and back). Here each parameter's step
// is Loom's elementwise ops, lazy, so that the update of a parameter and its state fuses
// as the foreach path's does. The formulas are the CPU kernels': the step count and the
// learning rate as doubles, an optional grad_scale divided out of the gradients (and
// written back), and a found_inf flag of 1 skipping the whole step. torch 1.13 has none of
// these schemas.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;
using at::TensorList;
using OptTensor = c10::optional<Tensor>;

// Whether found_inf says to skip the step; divides the gradients by grad_scale otherwise.
bool skip_or_unscale(TensorList grads, const OptTensor& grad_scale, const OptTensor& found_inf) {
  if (has(found_inf) && found_inf->item<double>() == 1.0) return true;
  if (has(grad_scale))
    for (const Tensor& g : grads) g.div_(*grad_scale);
  return false;
}

void check_lists(const char* op, std::initializer_list<TensorList> lists) {
  const size_t n = lists.begin()->size();
  for (TensorList l : lists)
    TORCH_CHECK(l.size() == n || l.empty(), op, ": expected lists of one length, got ", n, " and ",
                l.size());
}

void adam_step(const char* op, TensorList params, TensorList grads, TensorList exp_avgs,
               TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList steps, double lr,
               double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
               bool maximize, const OptTensor& grad_scale, const OptTensor& found_inf,
               bool decoupled) {
  check_lists(op, {params, grads, exp_avgs, exp_avg_sqs, steps});
  TORCH_CHECK(!amsgrad || max_exp_avg_sqs.size() == params.size(), op,
              ": amsgrad needs max_exp_avg_sqs for every parameter");
  if (params.empty() || skip_or_unscale(grads, grad_scale, found_inf)) return;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i], m = exp_avgs[i], v = exp_avg_sqs[i];
    const double step = steps[i].item<double>();
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, step));
    const double step_size = lr / bias_correction1;
    Tensor g = maximize ? grads[i].neg() : grads[i];
    if (weight_decay != 0) {
      if (decoupled)
        p.mul_(1 - lr * weight_decay);
      else
        g = g + p * weight_decay;
    }
    m.mul_(beta1).add_(g, 1 - beta1);
    v.mul_(beta2).addcmul_(g, g, 1 - beta2);
    Tensor top = v;
    if (amsgrad) {
      Tensor mx = max_exp_avg_sqs[i];
      at::maximum_out(mx, mx, v);
      top = mx;
    }
    Tensor denom = top.sqrt().div_(bias_correction2_sqrt).add_(eps);
    p.addcdiv_(m, denom, -step_size);
  }
}

#define LOOM_FUSED_ADAM(name, decoupled)                                                         \
  void name(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,    \
            TensorList max_exp_avg_sqs, TensorList steps, double lr, double beta1, double beta2, \
            double weight_decay, double eps, bool amsgrad, bool maximize,                        \
            const OptTensor& grad_scale, const OptTensor& found_inf) {                           \
    adam_step(#name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1,    \
              beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, decoupled);    \
  }                                                                                              \
  void name##_tensor_lr(TensorList params, TensorList grads, TensorList exp_avgs,                \
                        TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList steps,    \
                        const Tensor& lr, double beta1, double beta2, double weight_decay,       \
                        double eps, bool amsgrad, bool maximize, const OptTensor& grad_scale,    \
                        const OptTensor& found_inf) {                                            \
    adam_step(#name, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,               \
              lr.item<double>(), beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, \
              found_inf, decoupled);                                                             \
  }
LOOM_FUSED_ADAM(fused_adam, false)
LOOM_FUSED_ADAM(fused_adamw, true)
#undef LOOM_FUSED_ADAM

void fused_sgd(TensorList params, TensorList grads, TensorList bufs, double weight_decay,
               double momentum, double lr, double dampening, bool nesterov, bool maximize,
               bool is_first_step, const OptTensor& grad_scale, const OptTensor& found_inf) {
  check_lists("_fused_sgd_", {params, grads, bufs});
  TORCH_CHECK(momentum == 0 || bufs.size() == params.size(),
              "_fused_sgd_: momentum needs a buffer for every parameter");
  if (params.empty() || skip_or_unscale(grads, grad_scale, found_inf)) return;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    Tensor g = maximize ? grads[i].neg() : grads[i];
    if (weight_decay != 0) g = g + p * weight_decay;
    if (momentum != 0) {
      Tensor buf = bufs[i];
      if (is_first_step)
        buf.copy_(g);
      else
        buf.mul_(momentum).add_(g, 1 - dampening);
      g = nesterov ? g + buf * momentum : buf;
    }
    p.add_(g, -lr);
  }
}
void fused_sgd_tensor_lr(TensorList params, TensorList grads, TensorList bufs, double weight_decay,
                         double momentum, const Tensor& lr, double dampening, bool nesterov,
                         bool maximize, bool is_first_step, const OptTensor& grad_scale,
                         const OptTensor& found_inf) {
  fused_sgd(params, grads, bufs, weight_decay, momentum, lr.item<double>(), dampening, nesterov,
            maximize, is_first_step, grad_scale, found_inf);
}

// Adagrad: lr decayed by the step count, the squares of the gradients summed into
// state_sums, the step divided by their root plus eps.
void fused_adagrad(TensorList params, TensorList grads, TensorList state_sums, TensorList steps,
                   double lr, double lr_decay, double weight_decay, double eps, bool maximize,
                   const OptTensor& grad_scale, const OptTensor& found_inf) {
  check_lists("_fused_adagrad_", {params, grads, state_sums, steps});
  if (params.empty() || skip_or_unscale(grads, grad_scale, found_inf)) return;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i], sum = state_sums[i];
    const double clr = lr / (1.0 + (steps[i].item<double>() - 1.0) * lr_decay);
    Tensor g = maximize ? grads[i].neg() : grads[i];
    if (weight_decay != 0) g = g + p * weight_decay;
    sum.addcmul_(g, g);
    p.addcdiv_(g, sum.sqrt().add_(eps), -clr);
  }
}

// --- the gradient scaler's steps (torch.amp.GradScaler), with no wait for a value: the
// CPU's kernels read found_inf and the scale on the host; here they stay lazy, as where()s ---

// Each gradient times inv_scale; found_inf becomes 1 where any element of any is not
// finite (it is never reset here, as on the CPU).
void amp_unscale(TensorList grads, Tensor& found_inf, const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  TORCH_CHECK(inv_scale.numel() == 1, op, ": inv_scale must be a 1-element tensor.");
  TORCH_CHECK(found_inf.numel() == 1, op, ": found_inf must be a 1-element tensor.");
  TORCH_CHECK(inv_scale.scalar_type() == at::kFloat, op, ": inv_scale must be a float tensor.");
  TORCH_CHECK(found_inf.scalar_type() == at::kFloat, op, ": found_inf must be a float tensor.");
  for (const Tensor& g : grads) {
    check_operands(op, {g, found_inf, inv_scale});
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), op,
                ": expected floating point gradients, got ", g.scalar_type());
    if (g.numel() == 0) continue;
    found_inf.copy_(at::maximum(found_inf, at::logical_not(at::isfinite(g)).any().to(at::kFloat)));
    g.mul_(inv_scale);
  }
}

// After a step: a scale halved (backoff) and the tracker reset where found_inf is set;
// else the tracker counts up, and at growth_interval the scale grows (if it stays finite)
// and the tracker resets.
Tensor& amp_update_scale(Tensor& scale, Tensor& growth_tracker, const Tensor& found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_operands(op, {scale, growth_tracker, found_inf});
  TORCH_CHECK(growth_tracker.numel() == 1, op, ": growth_tracker must be a 1-element tensor.");
  TORCH_CHECK(scale.numel() == 1, op, ": current_scale must be a 1-element tensor.");
  TORCH_CHECK(found_inf.numel() == 1, op, ": found_inf must be a 1-element tensor.");
  TORCH_CHECK(growth_tracker.scalar_type() == at::kInt, op,
              ": growth_tracker must be an int tensor.");
  TORCH_CHECK(scale.scalar_type() == at::kFloat, op, ": current_scale must be a float tensor.");
  TORCH_CHECK(found_inf.scalar_type() == at::kFloat, op, ": found_inf must be a float tensor.");
  Tensor inf = found_inf.ne(0);
  Tensor successful = growth_tracker + 1;
  Tensor grow = at::logical_and(successful.eq(growth_interval), at::logical_not(inf));
  Tensor grown = scale * growth_factor;
  Tensor kept = at::where(at::logical_and(grow, at::isfinite(grown)), grown, scale);
  Tensor new_scale = at::where(inf, scale * backoff_factor, kept);
  Tensor new_tracker = at::where(at::logical_or(inf, grow), at::zeros_like(successful), successful);
  scale.copy_(new_scale);
  growth_tracker.copy_(new_tracker);
  return scale;
}

}  // namespace

// The optimizers' steps are torch 2.x's (no schemas in 1.13: registered, never reached
// there); the gradient scaler's are in both (1.13 has them for CUDA only).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", TORCH_FN(fused_adam));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN(fused_adam_tensor_lr));
  m.impl("_fused_adamw_", TORCH_FN(fused_adamw));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN(fused_adamw_tensor_lr));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(fused_sgd_tensor_lr));
  m.impl("_fused_adagrad_", TORCH_FN(fused_adagrad));
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(amp_unscale));
  m.impl("_amp_update_scale_", TORCH_FN(amp_update_scale));
}

}  // namespace loom::aten
