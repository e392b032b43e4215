#include "runtime/conv.h"

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef LOOM_HAVE_DNNL

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/thread_pool.h"

namespace loom {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

const dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// NOTE [oneDNN threads]: oneDNN (Debian's build) runs on OpenMP, with the calling thread's
// OpenMP thread count. OpenMP's workers spin after each parallel region and took the cores
// from Loom's kernels that ran between convolutions (a CNN step's convolutions ran at half
// their speed). So a batch is split across Loom's own pool instead, one single-threaded
// oneDNN call per part, as products are (NOTE [BLAS threads]); only a batch smaller than
// the pool runs as one call on OpenMP with Loom's thread count. Both settings are per
// thread and restored. A primitive fixes its thread count when it is made (its blocking
// depends on it), not when it runs: a plan is made under the count it will run with, and
// that count is part of its key. (Plans made on the caller's count, two here, ran each part
// on a team of two: four threads on two cores, and the convolutions of a CNN step took
// half again as long as alone.)
class OmpThreads {
 public:
  explicit OmpThreads(int n) {
    static auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    static auto set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    set_ = set;
    before_ = get ? get() : n;
    if (set_ && before_ != n) set_(n);
    else set_ = nullptr;
  }
  ~OmpThreads() {
    if (set_) set_(before_);
  }

 private:
  void (*set_)(int) = nullptr;
  int before_ = 0;
};

memory::dims data_dims(int64_t n, int64_t c, const std::vector<int64_t>& s) {
  memory::dims d{n, c};
  d.insert(d.end(), s.begin(), s.end());
  return d;
}

// Grouped weights are (G, OC/G, C/G, K...), the same memory as (OC, C/G, K...).
memory::dims weight_dims(const ConvDims& c) {
  memory::dims d;
  if (c.groups > 1) d.push_back(c.groups);
  d.insert(d.end(), {c.oc / c.groups, c.c / c.groups});
  d.insert(d.end(), c.kernel.begin(), c.kernel.end());
  return d;
}

memory::desc any_desc(const memory::dims& d) { return memory::desc(d, kF32, Tag::any); }

// The caller's arrays as oneDNN reads them.
struct UserDescs {
  memory::desc x, w, y;
};

UserDescs user_descs(const ConvDims& c, const ConvLayout& l) {
  memory::dims ws = l.w;
  if (c.groups > 1) ws.insert(ws.begin(), c.oc / c.groups * l.w[0]);
  return {memory::desc(data_dims(c.n, c.c, c.in), kF32, l.x),
          memory::desc(weight_dims(c), kF32, ws),
          memory::desc(data_dims(c.n, c.oc, c.out), kF32, l.y)};
}

struct Geometry {
  memory::dims strides, dilates, pad_l, pad_r;
};

Geometry geometry_of(const ConvDims& c) {
  Geometry g;
  for (size_t i = 0; i < c.kernel.size(); ++i) {
    g.strides.push_back(c.stride[i]);
    g.dilates.push_back(c.dilation[i] - 1);  // oneDNN counts the gaps
    g.pad_l.push_back(c.padding[i]);
    g.pad_r.push_back(c.padding[i]);
  }
  return g;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvDims& c, bool bias) {
  Geometry g = geometry_of(c);
  memory::desc b = bias ? memory::desc({c.oc}, kF32, Tag::x) : memory::desc();
  dnnl::convolution_forward::desc d(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      any_desc(data_dims(c.n, c.c, c.in)), any_desc(weight_dims(c)), b,
      any_desc(data_dims(c.n, c.oc, c.out)), g.strides, g.dilates, g.pad_l, g.pad_r);
  return {d, user_scratchpad(), cpu_engine()};
}

// One argument of a primitive: the caller's plain layout, the primitive's layout, and the
// reorder between them when they differ (into the primitive for inputs, out for outputs).
struct Operand {
  int arg;
  memory::desc user, inner;
  bool output;
  dnnl::reorder reorder;
};

// A primitive ready to run on the caller's plain arrays (operands in call order).
struct Plan {
  dnnl::primitive prim;
  memory::desc scratch;
  std::vector<Operand> operands;
};

void add_operand(Plan& p, int arg, const memory::desc& user, const memory::desc& inner,
                 bool output) {
  Operand o{arg, user, inner, output, {}};
  if (user != inner) {
    const dnnl::engine& e = cpu_engine();
    o.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(e, inner, e, user))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, inner));
  }
  p.operands.push_back(std::move(o));
}

enum class Kind : int64_t { Forward, ForwardBias, BackwardData, BackwardWeights };

std::unique_ptr<Plan> make_plan(Kind kind, const ConvDims& c, const ConvLayout& l) {
  auto p = std::make_unique<Plan>();
  const bool bias = kind == Kind::ForwardBias;
  const UserDescs u = user_descs(c, l);
  auto fwd = forward_pd(c, bias);
  if (kind == Kind::Forward || kind == Kind::ForwardBias) {
    p->prim = dnnl::convolution_forward(fwd);
    p->scratch = fwd.scratchpad_desc();
    add_operand(*p, DNNL_ARG_SRC, u.x, fwd.src_desc(), false);
    add_operand(*p, DNNL_ARG_WEIGHTS, u.w, fwd.weights_desc(), false);
    if (bias) add_operand(*p, DNNL_ARG_BIAS, fwd.bias_desc(), fwd.bias_desc(), false);
    add_operand(*p, DNNL_ARG_DST, u.y, fwd.dst_desc(), true);
    return p;
  }
  Geometry g = geometry_of(c);
  const memory::desc ax = any_desc(data_dims(c.n, c.c, c.in)), aw = any_desc(weight_dims(c)),
                     ay = any_desc(data_dims(c.n, c.oc, c.out));
  if (kind == Kind::BackwardData) {
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, ax, aw, ay,
                                            g.strides, g.dilates, g.pad_l, g.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(d, user_scratchpad(), cpu_engine(), fwd);
    p->prim = dnnl::convolution_backward_data(pd);
    p->scratch = pd.scratchpad_desc();
    add_operand(*p, DNNL_ARG_DIFF_DST, u.y, pd.diff_dst_desc(), false);
    add_operand(*p, DNNL_ARG_WEIGHTS, u.w, pd.weights_desc(), false);
    add_operand(*p, DNNL_ARG_DIFF_SRC, u.x, pd.diff_src_desc(), true);
    return p;
  }
  dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, ax, aw, ay,
                                             g.strides, g.dilates, g.pad_l, g.pad_r);
  dnnl::convolution_backward_weights::primitive_desc pd(d, user_scratchpad(), cpu_engine(), fwd);
  p->prim = dnnl::convolution_backward_weights(pd);
  p->scratch = pd.scratchpad_desc();
  add_operand(*p, DNNL_ARG_SRC, u.x, pd.src_desc(), false);
  add_operand(*p, DNNL_ARG_DIFF_DST, u.y, pd.diff_dst_desc(), false);
  add_operand(*p, DNNL_ARG_DIFF_WEIGHTS, u.w, pd.diff_weights_desc(), true);
  return p;
}

// Plans are made once per kind, shape, layout and OpenMP thread count; running one
// allocates its own temporaries and scratchpad, so threads may share it.
const Plan& plan_for(Kind kind, const ConvDims& c, const ConvLayout& l, int threads) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans;
  std::vector<int64_t> key{int64_t(kind), c.n, c.c, c.oc, c.groups, threads};
  for (const auto* v : {&c.in, &c.kernel, &c.out, &c.stride, &c.padding, &c.dilation, &l.x,
                        &l.w, &l.y})
    key.insert(key.end(), v->begin(), v->end());
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = plans[key];
  if (!slot) {
    OmpThreads count(threads);
    slot = make_plan(kind, c, l);
  }
  return *slot;
}

// One call of a plan on the caller's arrays, on the calling thread's OpenMP threads.
void execute(const Plan& p, const std::vector<const void*>& ptrs) {
  const dnnl::engine& e = cpu_engine();
  dnnl::stream s(e);
  std::unordered_map<int, memory> args;
  std::vector<std::pair<memory, memory>> copy_out;  // (inner, user)
  for (size_t i = 0; i < p.operands.size(); ++i) {
    const Operand& o = p.operands[i];
    memory user(o.user, e, const_cast<void*>(ptrs[i]));
    if (!o.reorder) {
      args.emplace(o.arg, user);
      continue;
    }
    memory inner(o.inner, e);
    if (o.output)
      copy_out.emplace_back(inner, user);
    else
      o.reorder.execute(s, user, inner);
    args.emplace(o.arg, inner);
  }
  memory scratch(p.scratch, e);
  args.emplace(DNNL_ARG_SCRATCHPAD, scratch);
  p.prim.execute(s, args);
  size_t k = 0;
  for (const Operand& o : p.operands)
    if (o.reorder && o.output) {
      o.reorder.execute(s, copy_out[k].first, copy_out[k].second);
      ++k;
    }
  s.wait();
}

// A batch split into parts, one per pool thread (see NOTE [oneDNN threads]).
struct Split {
  int64_t chunk;
  std::vector<const Plan*> plans;         // per part
  std::vector<std::vector<const void*>> ptrs;  // per part
  std::vector<std::string> errors;        // per part
};

void run_parts(char** bufs, int64_t s, int64_t e) {
  Split& sp = *reinterpret_cast<Split*>(bufs[0]);
  OmpThreads one(1);
  for (int64_t i = s; i < e; ++i) try {
      execute(*sp.plans[size_t(i)], sp.ptrs[size_t(i)]);
    } catch (const std::exception& err) {
      sp.errors[size_t(i)] = err.what();
    }
}

void run(Kind kind, const ConvDims& c, const ConvLayout& l, const std::vector<const void*>& ptrs) {
  try {
    const int threads = num_threads();
    if (c.n < threads || threads == 1) {
      const Plan& p = plan_for(kind, c, l, threads);
      OmpThreads all(threads);
      execute(p, ptrs);
      return;
    }
    Split sp{(c.n + threads - 1) / threads, {}, {}, {}};
    // Which operands hold the batch (with their batch stride); the rest are the weight,
    // whose gradient each part writes on its own, summed after.
    std::vector<int64_t> batch_stride(ptrs.size(), 0);
    if (kind == Kind::BackwardWeights) batch_stride = {l.x[0], l.y[0], 0};
    if (kind == Kind::BackwardData) batch_stride = {l.y[0], 0, l.x[0]};
    if (kind == Kind::Forward || kind == Kind::ForwardBias) {
      batch_stride.front() = l.x[0];
      batch_stride.back() = l.y[0];
    }
    const int64_t wsize = c.oc * (c.c / c.groups) *
                          std::accumulate(c.kernel.begin(), c.kernel.end(), int64_t(1), std::multiplies<>());
    std::vector<std::vector<float>> partial;
    for (int64_t i = 0; i * sp.chunk < c.n; ++i) {
      ConvDims part = c;
      part.n = std::min(sp.chunk, c.n - i * sp.chunk);
      sp.plans.push_back(&plan_for(kind, part, l, 1));
      std::vector<const void*> q = ptrs;
      for (size_t k = 0; k < q.size(); ++k)
        q[k] = static_cast<const float*>(q[k]) + i * sp.chunk * batch_stride[k];
      if (kind == Kind::BackwardWeights && i > 0) q[2] = partial.emplace_back(size_t(wsize)).data();
      sp.ptrs.push_back(std::move(q));
    }
    sp.errors.resize(sp.plans.size());
    char* bufs[1] = {reinterpret_cast<char*>(&sp)};
    run_parallel(run_parts, bufs, int64_t(sp.plans.size()), 1);
    for (const std::string& err : sp.errors)
      if (!err.empty()) throw std::runtime_error("loom: oneDNN convolution failed: " + err);
    // Weight gradients of the parts: the same dense layout, so a flat sum.
    float* dw = static_cast<float*>(const_cast<void*>(ptrs.back()));
    for (const std::vector<float>& p : partial)
      for (int64_t j = 0; j < wsize; ++j) dw[j] += p[size_t(j)];
  } catch (const dnnl::error& err) {
    throw std::runtime_error(std::string("loom: oneDNN convolution failed: ") + err.what());
  }
}

}  // namespace

namespace {
std::atomic<bool>& library_on() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("LOOM_DNNL");
    return !(env && std::string(env) == "0");
  }();
  return on;
}
}  // namespace

bool conv_library_available() { return library_on().load(std::memory_order_relaxed); }
void set_conv_library(bool on) { library_on().store(on, std::memory_order_relaxed); }

void conv_forward_f32(const ConvDims& d, const ConvLayout& l, const float* x, const float* w,
                      const float* bias, float* y) {
  if (bias)
    run(Kind::ForwardBias, d, l, {x, w, bias, y});
  else
    run(Kind::Forward, d, l, {x, w, y});
}

void conv_backward_data_f32(const ConvDims& d, const ConvLayout& l, const float* dy,
                            const float* w, float* dx) {
  run(Kind::BackwardData, d, l, {dy, w, dx});
}

void conv_backward_weights_f32(const ConvDims& d, const ConvLayout& l, const float* x,
                               const float* dy, float* dw) {
  run(Kind::BackwardWeights, d, l, {x, dy, dw});
}

}  // namespace loom

#else  // no oneDNN

namespace loom {

bool conv_library_available() { return false; }
void set_conv_library(bool) {}

[[noreturn]] static void no_library() {
  throw std::logic_error("loom: built without oneDNN (libdnnl-dev); convolutions use im2col");
}

void conv_forward_f32(const ConvDims&, const ConvLayout&, const float*, const float*,
                      const float*, float*) {
  no_library();
}
void conv_backward_data_f32(const ConvDims&, const ConvLayout&, const float*, const float*,
                            float*) {
  no_library();
}
void conv_backward_weights_f32(const ConvDims&, const ConvLayout&, const float*, const float*,
                               float*) {
  no_library();
}

}  // namespace loom

#endif
