// Random permutations and in-place random fills (uniform_, normal_ and its tensor forms,
// exponential_, cauchy_, log_normal_, geometric_, bernoulli_, random_).
//
// NOTE [Loom RNG]: each random fill takes one 64-bit seed from the (default CPU or given)
// generator and records a counter-based random leaf (rand_uniform / rand_normal) keyed by
// that seed. torch.manual_seed therefore makes Loom streams reproducible, but the values
// differ from the CPU device's stream: only the distributions agree.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/MetaFunctions.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <torch/library.h>

#include <cmath>
#include <functional>
#include <limits>

#include "aten/elementwise.h"
#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

NodeRef cf(double v, DType t, const Shape& s) { return constant(Scalar::of_float(v), t, s); }

// --- random fills ---

uint64_t next_seed(const c10::optional<at::Generator>& gen) {
  auto* g = at::get_generator_or_default<at::CPUGeneratorImpl>(gen, at::detail::getDefaultCPUGenerator());
  std::lock_guard<std::mutex> lock(g->mutex_);
  return g->random64();
}

// --- randperm: a Fisher-Yates shuffle on the host, drawn from a seed of the generator (the
// same seed gives the same permutation on Loom, not the CPU's) ---

Tensor& randperm_out(int64_t n, c10::optional<at::Generator> gen, Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  const c10::ScalarType st = out.scalar_type();
  TORCH_CHECK(st != at::kBool && !at::isComplexType(st), "\"randperm\" not implemented for '",
              c10::toString(st), "'");
  at::native::check_supported_max_int_with_precision(n, out);
  out.resize_({n});
  if (n == 0) return out;
  uint64_t state = next_seed(gen);
  auto draw = [&state] {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  Tensor host = at::arange(n, at::kLong);
  int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i + 1 < n; ++i) std::swap(p[i], p[i + int64_t(draw() % uint64_t(n - i))]);
  out.copy_(host.to(st));
  return out;
}

// Uniform [0, 1) in the type that `self`'s values are computed in.
DType rand_dtype(const Tensor& self) {
  return self.scalar_type() == at::kDouble ? DType::Float64 : DType::Float32;
}

// NOTE [Checks of random fills]: an in-place random fill makes the argument and dtype checks
// of the running torch's CPU kernel by calling it: it fills one element of self's dtype with
// a generator of its own, so that the default generator's stream is untouched. torch 2.x's
// Python meta functions for these ops skip most checks, and its texts differ from 1.13's
// ("Cauchy distribution is a continuous probability distribution..."). bernoulli_ checks
// float16 as float: 1.13's CPU has no float16 kernel, and Loom fills float16 all the same.
void cpu_fill_checks(c10::ScalarType t, const std::function<void(Tensor&, at::Generator)>& fill) {
  thread_local at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(0);
  Tensor one = at::empty({1}, at::TensorOptions().dtype(t));
  fill(one, gen);
}

// A complex tensor is filled as its parts, like the CPU does (normal_: each part gets
// half the variance).
Tensor& uniform_ip(Tensor& self, double from, double to, c10::optional<at::Generator> gen) {
  if (self.is_complex()) {
    Tensor parts = at::view_as_real(self);
    uniform_ip(parts, from, to, gen);
    return self;
  }
  cpu_fill_checks(self.scalar_type(), [&](Tensor& t, at::Generator g) { t.uniform_(from, to, g); });
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  DType c = rand_dtype(self);
  Shape s = out_shape(self);
  NodeRef u = rand_uniform(c, s, seed, 0);
  assign(self, binary(Op::Add, cf(from, c, s), binary(Op::Mul, cf(to - from, c, s), u)));
  return self;
}

Tensor& normal_ip(Tensor& self, double mean, double std, c10::optional<at::Generator> gen) {
  if (self.is_complex()) {
    TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
    Tensor parts = at::view_as_real(self);
    normal_ip(parts, mean, std / std::sqrt(2), gen);
    return self;
  }
  cpu_fill_checks(self.scalar_type(), [&](Tensor& t, at::Generator g) { t.normal_(mean, std, g); });
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  DType c = rand_dtype(self);
  Shape s = out_shape(self);
  NodeRef n = rand_normal(c, s, seed, 0);
  assign(self, binary(Op::Add, cf(mean, c, s), binary(Op::Mul, cf(std, c, s), n)));
  return self;
}

constexpr const char* kNegativeStd = "normal expects all elements of std >= 0.0";

// NOTE [Checked std]: the CPU reads std.min() at the op and raises for a negative (or NaN)
// element. Where std's values are at hand (realized, at most kMaxEagerCheck elements: a
// tensor copied in) Loom reads them too and raises there; otherwise the kernel checks each
// element it reads (NOTE [Deferred checks]) and the error comes at the next realization,
// as an index fault does, rather than realizing std at the op.
// Returns whether std was checked here.
bool std_checked_now(const Tensor& std) {
  if (std.numel() == 0) return true;
  if (!at::isFloatingType(std.scalar_type()) || std.numel() > kMaxEagerCheck) return false;
  EngineLock g(engine_mutex());
  if (!buffer_of(std).value()->realized) return false;
  const char* base = storage_bytes(std) + std.storage_offset() * std.element_size();
  Tensor host = at::from_blob(const_cast<char*>(base), std.sizes(), std.strides(),
                              std.options().device(at::kCPU));
  // NaN compares false, as in the CPU's std.min().ge(0).
  TORCH_CHECK(host.ge(0).all().item<bool>(), kNegativeStd);
  return true;
}

// normal with tensor mean and/or std: mean + std * n, broadcast as PyTorch does, into `out`
// (its shape and dtype the meta op's).
void normal_into(const Tensor& out, const c10::optional<Tensor>& mean_t, double mean,
                 const c10::optional<Tensor>& std_t, double std, uint64_t seed, bool std_checked) {
  DType c = rand_dtype(out);
  Shape s = out_shape(out);
  NodeRef n = rand_normal(c, s, seed, 0);
  const DType real = c;
  if (out.is_complex()) {  // parts of variance 1/2, as the CPU's
    NodeRef half = cf(1 / std::sqrt(2), c, s);
    NodeRef im = rand_normal(c, s, seed, uint64_t(numel(s)));
    n = binary(Op::Complex, binary(Op::Mul, n, half), binary(Op::Mul, im, half));
    c = n->dtype;
  }
  NodeRef m = mean_t ? operand(*mean_t, s, c) : cf(mean, c, s);
  NodeRef d = cf(std, c, s);
  if (std_t) {
    d = operand(*std_t, s, real);
    if (!std_checked) {  // NOTE [Checked std]
      static const int msg = fault_message(FaultKind::Runtime, kNegativeStd);
      d = check_nonnegative(d, msg);
    }
    d = cast(d, c);
  }
  assign(out, binary(Op::Add, m, binary(Op::Mul, d, n)));
}

Tensor normal_value(const Tensor& meta, const c10::optional<Tensor>& mean_t, double mean,
                    const c10::optional<Tensor>& std_t, double std,
                    c10::optional<at::Generator> gen) {
  TORCH_CHECK(!std_t || !std_t->is_complex(), "normal expects standard deviation to be non-complex");
  const bool checked = !std_t || std_checked_now(*std_t);
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  normal_into(out, mean_t, mean, std_t, std, seed, checked);
  return out;
}
Tensor normal_tf(const Tensor& mean, double std, c10::optional<at::Generator> gen) {
  Tensor meta = at::meta::normal(to_meta(mean), std);
  return normal_value(meta, mean, 0, c10::nullopt, std, gen);
}
Tensor normal_ft(double mean, const Tensor& std, c10::optional<at::Generator> gen) {
  Tensor meta = at::meta::normal(mean, to_meta(std));
  return normal_value(meta, c10::nullopt, mean, std, 0, gen);
}
Tensor normal_tt(const Tensor& mean, const Tensor& std, c10::optional<at::Generator> gen) {
  Tensor meta = at::meta::normal(to_meta(mean), to_meta(std));
  return normal_value(meta, mean, 0, std, 0, gen);
}

// The out= forms: the meta op checks and sizes `out` as the CPU's does (its shape
// broadcasts the mean's or std's with out's own).
Tensor& normal_out_value(Tensor& out, const Tensor& meta_out, const c10::optional<Tensor>& mean_t,
                         double mean, const c10::optional<Tensor>& std_t, double std,
                         c10::optional<at::Generator> gen) {
  TORCH_CHECK(!std_t || !std_t->is_complex(), "normal expects standard deviation to be non-complex");
  check_operands("normal", {out});
  const bool checked = !std_t || std_checked_now(*std_t);
  at::native::resize_output(out, meta_out.sizes());
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  normal_into(out, mean_t, mean, std_t, std, seed, checked);
  return out;
}
Tensor& normal_tf_out(const Tensor& mean, double std, c10::optional<at::Generator> gen, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::normal_outf(to_meta(mean), std, c10::nullopt, mo);
  return normal_out_value(out, mo, mean, 0, c10::nullopt, std, gen);
}
Tensor& normal_ft_out(double mean, const Tensor& std, c10::optional<at::Generator> gen, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::normal_outf(mean, to_meta(std), c10::nullopt, mo);
  return normal_out_value(out, mo, c10::nullopt, mean, std, 0, gen);
}
Tensor& normal_tt_out(const Tensor& mean, const Tensor& std, c10::optional<at::Generator> gen,
                      Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::normal_outf(to_meta(mean), to_meta(std), c10::nullopt, mo);
  return normal_out_value(out, mo, mean, 0, std, 0, gen);
}

Tensor& exponential_ip(Tensor& self, double lambd, c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(),
                  [&](Tensor& t, at::Generator g) { t.exponential_(lambd, g); });
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  DType c = rand_dtype(self);
  Shape s = out_shape(self);
  NodeRef u = rand_uniform(c, s, seed, 0);
  // -log(1 - u) / lambda; 1 - u lies in (0, 1].
  NodeRef e = unary(Op::Neg, unary(Op::Log1p, unary(Op::Neg, u)));
  assign(self, binary(Op::Div, e, cf(lambd, c, s)));
  return self;
}

// cauchy_, log_normal_ and geometric_ transform Loom's uniform or normal draws in double, as
// the CPU's distributions compute (then cast to the tensor's dtype).
Tensor& random_transform(Tensor& self, c10::optional<at::Generator> gen, bool normal,
                         const std::function<NodeRef(const NodeRef&, const Shape&)>& f) {
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  Shape s = out_shape(self);
  NodeRef v = normal ? rand_normal(DType::Float64, s, seed, 0)
                     : rand_uniform(DType::Float64, s, seed, 0);
  assign(self, f(v, s));
  return self;
}
Tensor& cauchy_ip(Tensor& self, double median, double sigma, c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(),
                  [&](Tensor& t, at::Generator g) { t.cauchy_(median, sigma, g); });
  return random_transform(self, gen, false, [&](const NodeRef& u, const Shape& s) {
    NodeRef angle = binary(Op::Mul, cf(3.14159265358979323846, DType::Float64, s),
                           binary(Op::Sub, u, cf(0.5, DType::Float64, s)));
    return binary(Op::Add, cf(median, DType::Float64, s),
                  binary(Op::Mul, cf(sigma, DType::Float64, s), unary(Op::Tan, angle)));
  });
}
Tensor& log_normal_ip(Tensor& self, double mean, double std, c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(),
                  [&](Tensor& t, at::Generator g) { t.log_normal_(mean, std, g); });
  return random_transform(self, gen, true, [&](const NodeRef& n, const Shape& s) {
    return unary(Op::Exp, binary(Op::Add, cf(mean, DType::Float64, s),
                                 binary(Op::Mul, cf(std, DType::Float64, s), n)));
  });
}
Tensor& geometric_ip(Tensor& self, double p, c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(), [&](Tensor& t, at::Generator g) { t.geometric_(p, g); });
  return random_transform(self, gen, false, [&](const NodeRef& u, const Shape& s) {
    // ceil(log(v) / log(1 - p)) with v = 1 - u in (0, 1]: the draws at least 1.
    NodeRef v = unary(Op::Log1p, unary(Op::Neg, u));
    return unary(Op::Ceil, binary(Op::Div, v, cf(std::log(1.0 - p), DType::Float64, s)));
  });
}

NodeRef bernoulli_value(const Tensor& self, const NodeRef& p, uint64_t seed) {
  Shape s = out_shape(self);
  return binary(Op::Lt, rand_uniform(p->dtype, s, seed, 0), p);
}

Tensor& bernoulli_float_ip(Tensor& self, double p, c10::optional<at::Generator> gen) {
  at::assert_no_internal_overlap(self);
  cpu_fill_checks(self.scalar_type() == at::kHalf ? at::kFloat : self.scalar_type(),
                  [&](Tensor& t, at::Generator g) { t.bernoulli_(p, g); });
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  assign(self, bernoulli_value(self, cf(p, DType::Float64, out_shape(self)), seed));
  return self;
}

Tensor& bernoulli_tensor_ip(Tensor& self, const Tensor& p, c10::optional<at::Generator> gen) {
  check_operands("bernoulli_", {p});
  at::assert_no_internal_overlap(self);
  check_not_complex("bernoulli_tensor_cpu_self_", self.scalar_type());
  check_not_complex("bernoulli_tensor_cpu_p_", p.scalar_type());
  to_meta(self).bernoulli_(to_meta(p));
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  DType c = p.scalar_type() == at::kDouble ? DType::Float64 : DType::Float32;
  assign(self, bernoulli_value(self, operand(p, out_shape(self), c), seed));
  return self;
}

// random_: integers uniform in [from, to_inc], computed in double. Ranges wider than 2^53
// lose their low bits; the result is clamped to the range so that rounding never leaves it.
void random_fill(Tensor& self, int64_t from, int64_t to_inc, c10::optional<at::Generator> gen) {
  uint64_t seed = next_seed(gen);
  EngineLock g(engine_mutex());
  Shape s = out_shape(self);
  const DType c = DType::Float64;
  double range = double(to_inc) - double(from) + 1.0;
  double lo = double(from), hi = double(to_inc);  // then moved inside [from, to_inc]
  if ((long double)hi > (long double)to_inc) hi = std::nextafter(hi, -INFINITY);
  if ((long double)lo < (long double)from) lo = std::nextafter(lo, INFINITY);
  NodeRef u = rand_uniform(c, s, seed, 0);
  NodeRef v = binary(Op::Add, cf(double(from), c, s), unary(Op::Floor, binary(Op::Mul, u, cf(range, c, s))));
  v = binary(Op::Minimum, binary(Op::Maximum, v, cf(lo, c, s)), cf(hi, c, s));
  assign(self, v);
}

// The largest value random_ draws without an explicit `to` (as CPU's random_from_to).
int64_t default_to_inc(const Tensor& self) {
  int64_t r = 0;
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, self.scalar_type(), "random_loom", [&] {
    if (std::is_floating_point<scalar_t>::value || std::is_same<scalar_t, at::Half>::value ||
        std::is_same<scalar_t, at::BFloat16>::value)
      r = int64_t(1) << std::numeric_limits<scalar_t>::digits;
    else if (std::is_same<scalar_t, bool>::value)
      r = 1;
    else
      r = static_cast<int64_t>(std::numeric_limits<scalar_t>::max());
  });
  return r;
}

Tensor& random_ip(Tensor& self, c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(), [](Tensor& t, at::Generator g) { t.random_(g); });
  random_fill(self, 0, default_to_inc(self), gen);
  return self;
}


// A floating dtype's bounds move inward to the nearest integers whose values it holds, as
// the CPU's do (its update_from / update_to): float16's random_(0, 65504) draws up to 65472,
// since 65503 rounds to 65504.
void held_bounds(const Tensor& self, int64_t& from, c10::optional<int64_t>& to) {
  if (!at::isFloatingType(self.scalar_type())) return;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "random_loom", [&] {
    from = at::native::templates::update_from<scalar_t>(from);
    if (to) to = at::native::templates::update_to<scalar_t>(*to);
  });
}

Tensor& random_to_ip(Tensor& self, int64_t to, c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(), [&](Tensor& t, at::Generator g) { t.random_(to, g); });
  int64_t from = 0;
  c10::optional<int64_t> t = to;
  held_bounds(self, from, t);
  random_fill(self, from, *t - 1, gen);
  return self;
}

Tensor& random_from_ip(Tensor& self, int64_t from, c10::optional<int64_t> to,
                       c10::optional<at::Generator> gen) {
  cpu_fill_checks(self.scalar_type(), [&](Tensor& t, at::Generator g) { t.random_(from, to, g); });
  held_bounds(self, from, to);
  random_fill(self, from, to.has_value() ? *to - 1 : default_to_inc(self), gen);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("randperm.generator_out", randperm_out);
  m.impl("uniform_", uniform_ip);
  m.impl("normal_", normal_ip);
  m.impl("normal.Tensor_float", normal_tf);
  m.impl("normal.float_Tensor", normal_ft);
  m.impl("normal.Tensor_Tensor", normal_tt);
  m.impl("normal.Tensor_float_out", normal_tf_out);
  m.impl("normal.float_Tensor_out", normal_ft_out);
  m.impl("normal.Tensor_Tensor_out", normal_tt_out);
  m.impl("exponential_", exponential_ip);
  m.impl("cauchy_", cauchy_ip);
  m.impl("log_normal_", log_normal_ip);
  m.impl("geometric_", geometric_ip);
  m.impl("bernoulli_.float", bernoulli_float_ip);
  m.impl("bernoulli_.Tensor", bernoulli_tensor_ip);
  m.impl("random_", random_ip);
  m.impl("random_.to", random_to_ip);
  m.impl("random_.from", random_from_ip);
}

}  // namespace loom::aten
