// multinomial, by the CPU's two methods with Loom's random numbers (NOTE [Loom RNG]): without
// replacement, the k largest of p / q with q ~ Exp(1) (argmax for one sample); with
// replacement, each sample the first category whose normalized cumulative probability
// reaches a uniform draw. An invalid distribution (an entry below 0, infinite or NaN, or
// a row summing to 0) is found in the kernel and raises the CPU's message at realization,
// as index faults do: nothing is realized at the op.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

// `values` with faults attached: each flag (a 0-d bool Loom tensor) that is true stops
// the kernel computing the result with its message.
NodeRef with_checks(const Tensor& values,
                    const std::vector<std::pair<Tensor, std::string>>& flags) {
  NodeRef v = read_tensor(values);
  for (const auto& [flag, message] : flags) {
    NodeRef f = checked(cast(read_tensor(flag), DType::Int64), 1, false, false, message);
    v = binary(Op::Add, v, expand(f, v->shape));
  }
  return v;
}

Tensor& multinomial_out(const Tensor& self, int64_t n_sample, bool replacement,
                        c10::optional<at::Generator> gen, Tensor& result) {
  check_operands("multinomial", {self, result});
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(
      at::isFloatingType(self.scalar_type()),
      "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(result.scalar_type() == at::kLong,
              "multinomial expects Long tensor out, got: ", result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  const int64_t categories = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(categories <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  if (self.dim() == 1)
    at::native::resize_output(result, {n_sample});
  else
    at::native::resize_output(result, {self.size(0), n_sample});
  if (result.numel() == 0) return result;
  // Half and bfloat16 probabilities are sampled in float (CUDA takes half; the CPU does not).
  const Tensor p = (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16)
                       ? self.to(at::kFloat)
                       : self;
  const Tensor row_sum = p.sum(-1);
  Tensor picks;
  std::vector<std::pair<Tensor, std::string>> flags;
  if (!replacement) {
    flags.push_back({(p.isnan() | p.isinf() | (p < 0)).any(),
                     "probability tensor contains either `inf`, `nan` or element < 0"});
    flags.push_back(
        {(row_sum == 0).any(), "invalid multinomial distribution (sum of probabilities <= 0)"});
    Tensor keys = p / at::empty_like(p).exponential_(1, gen);
    picks = n_sample == 1 ? keys.argmax(-1, /*keepdim=*/true) : std::get<1>(keys.topk(n_sample));
  } else {
    flags.push_back({(~(p >= 0)).any(),
                     "invalid multinomial distribution (encountering probability entry < 0)"});
    flags.push_back({p.isinf().any(),
                     "invalid multinomial distribution (encountering probability "
                     "entry = infinity or NaN)"});
    flags.push_back(
        {(row_sum <= 0).any(), "invalid multinomial distribution (sum of probabilities <= 0)"});
    // The cumulative distribution over its total, its last entry 1.
    Tensor cdf = p.cumsum(-1) / row_sum.unsqueeze(-1);
    cdf.narrow(-1, categories - 1, 1).fill_(1);
    std::vector<int64_t> draws = result.sizes().vec();
    Tensor u = at::empty(draws, p.options().dtype(at::kDouble)).uniform_(0, 1, gen);
    picks = (cdf.to(at::kDouble).unsqueeze(-2) < u.unsqueeze(-1)).sum(-1);
  }
  EngineLock g(engine_mutex());
  write_tensor(result, with_checks(picks, flags));
  return result;
}

Tensor multinomial(const Tensor& self, int64_t n_sample, bool replacement,
                   c10::optional<at::Generator> gen) {
  Tensor result = empty_loom({0}, at::kLong);
  return multinomial_out(self, n_sample, replacement, gen, result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multinomial", multinomial);
  m.impl("multinomial.out", multinomial_out);
}

}  // namespace loom::aten
