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
// their speed). So a call is split across Loom's own pool instead (NOTE [Convolution
// parts]), one single-threaded oneDNN call per part, as products are (NOTE [BLAS
// threads]). The setting is per thread and restored. A primitive fixes its thread count
// when it is made (its blocking depends on it), not when it runs: plans are made under a
// count of one. (Plans made on the caller's count, two here, ran each part on a team of
// two: four threads on two cores, and the convolutions of a CNN step took half again as
// long as alone.)
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
  const memory::desc x = any_desc(data_dims(c.n, c.c, c.in)), w = any_desc(weight_dims(c)),
                     y = any_desc(data_dims(c.n, c.oc, c.out));
  const auto prop = dnnl::prop_kind::forward_training;
  const auto algo = dnnl::algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3  // no operation descriptors (Debian trixie's oneDNN)
  if (!bias)
    return {cpu_engine(), prop, algo, x, w, y, g.strides, g.dilates, g.pad_l, g.pad_r,
            user_scratchpad()};
  return {cpu_engine(), prop, algo, x, w, memory::desc({c.oc}, kF32, Tag::x), y, g.strides,
          g.dilates, g.pad_l, g.pad_r, user_scratchpad()};
#else
  memory::desc b = bias ? memory::desc({c.oc}, kF32, Tag::x) : memory::desc();
  dnnl::convolution_forward::desc d(prop, algo, x, w, b, y, g.strides, g.dilates, g.pad_l,
                                    g.pad_r);
  return {d, user_scratchpad(), cpu_engine()};
#endif
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
#if DNNL_VERSION_MAJOR >= 3
    dnnl::convolution_backward_data::primitive_desc pd(
        cpu_engine(), dnnl::algorithm::convolution_direct, ax, aw, ay, g.strides, g.dilates,
        g.pad_l, g.pad_r, fwd, user_scratchpad());
#else
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, ax, aw, ay,
                                            g.strides, g.dilates, g.pad_l, g.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(d, user_scratchpad(), cpu_engine(), fwd);
#endif
    p->prim = dnnl::convolution_backward_data(pd);
    p->scratch = pd.scratchpad_desc();
    add_operand(*p, DNNL_ARG_DIFF_DST, u.y, pd.diff_dst_desc(), false);
    add_operand(*p, DNNL_ARG_WEIGHTS, u.w, pd.weights_desc(), false);
    add_operand(*p, DNNL_ARG_DIFF_SRC, u.x, pd.diff_src_desc(), true);
    return p;
  }
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_backward_weights::primitive_desc pd(
      cpu_engine(), dnnl::algorithm::convolution_direct, ax, aw, ay, g.strides, g.dilates,
      g.pad_l, g.pad_r, fwd, user_scratchpad());
#else
  dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, ax, aw, ay,
                                             g.strides, g.dilates, g.pad_l, g.pad_r);
  dnnl::convolution_backward_weights::primitive_desc pd(d, user_scratchpad(), cpu_engine(), fwd);
#endif
  p->prim = dnnl::convolution_backward_weights(pd);
  p->scratch = pd.scratchpad_desc();
  add_operand(*p, DNNL_ARG_SRC, u.x, pd.src_desc(), false);
  add_operand(*p, DNNL_ARG_DIFF_DST, u.y, pd.diff_dst_desc(), false);
  add_operand(*p, DNNL_ARG_DIFF_WEIGHTS, u.w, pd.diff_weights_desc(), true);
  return p;
}

// Plans are made once per kind, shape and layout, for one OpenMP thread; running one
// allocates its own temporaries and scratchpad, so threads may share it.
const Plan& plan_for(Kind kind, const ConvDims& c, const ConvLayout& l) {
  static std::mutex mu;
  static std::map<std::vector<int64_t>, std::unique_ptr<Plan>> plans;
  std::vector<int64_t> key{int64_t(kind), c.n, c.c, c.oc, c.groups};
  for (const auto* v : {&c.in, &c.kernel, &c.out, &c.stride, &c.padding, &c.dilation, &l.x,
                        &l.w, &l.y})
    key.insert(key.end(), v->begin(), v->end());
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = plans[key];
  if (!slot) {
    OmpThreads one(1);
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

// A call split into parts, one per pool thread (see NOTE [oneDNN threads]).
struct Split {
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

// What each operand of a kind's call is, in call order.
enum Role { kX, kW, kB, kY };
std::vector<Role> roles_of(Kind kind) {
  switch (kind) {
    case Kind::Forward: return {kX, kW, kY};
    case Kind::ForwardBias: return {kX, kW, kB, kY};
    case Kind::BackwardData: return {kY, kW, kX};
    case Kind::BackwardWeights: return {kX, kY, kW};
  }
  return {};
}

// One part of a split call: its dims and where each role's array starts (in elements).
struct Part {
  ConvDims dims;
  int64_t offset[4] = {0, 0, 0, 0};  // by Role
};

// NOTE [Convolution parts]: a call splits across the pool along the batch where the batch
// has an image for each thread; otherwise along the groups, or, ungrouped, along the
// channels the call writes (a forward's or weight gradient's output channels, a data
// gradient's input channels): each part is a whole convolution on a slice of the weight,
// with no sum between parts. A batch of one image once ran as a single call on OpenMP's
// two threads while the pool's threads spun (NOTE [Spinning pool]): on two cores OpenMP's
// barriers waited on descheduled threads, and a 32-channel 3x3 convolution of one 32x32
// image took 8-10 ms against eager's 0.17. Only what splits no way runs whole, on one
// thread.
std::vector<Part> parts_of(Kind kind, const ConvDims& c, const ConvLayout& l, int threads) {
  std::vector<Part> parts;
  auto split = [&](int64_t total, auto make) {
    const int64_t chunk = (total + threads - 1) / threads;
    for (int64_t i = 0; i * chunk < total; ++i) {
      Part p{c};
      make(p, i * chunk, std::min(chunk, total - i * chunk));
      parts.push_back(std::move(p));
    }
  };
  if (c.n >= threads) {
    split(c.n, [&](Part& p, int64_t first, int64_t count) {
      p.dims.n = count;
      p.offset[kX] = first * l.x[0];
      p.offset[kY] = first * l.y[0];
    });
  } else if (c.groups >= threads) {
    const int64_t cg = c.c / c.groups, og = c.oc / c.groups;
    split(c.groups, [&](Part& p, int64_t first, int64_t count) {
      p.dims.groups = count;
      p.dims.c = count * cg;
      p.dims.oc = count * og;
      p.offset[kX] = first * cg * l.x[1];
      p.offset[kY] = first * og * l.y[1];
      p.offset[kW] = first * og * l.w[0];
      p.offset[kB] = first * og;
    });
  } else if (c.groups == 1 && kind == Kind::BackwardData && c.c >= threads) {
    split(c.c, [&](Part& p, int64_t first, int64_t count) {
      p.dims.c = count;
      p.offset[kX] = first * l.x[1];
      p.offset[kW] = first * l.w[1];
    });
  } else if (c.groups == 1 && kind != Kind::BackwardData && c.oc >= threads) {
    split(c.oc, [&](Part& p, int64_t first, int64_t count) {
      p.dims.oc = count;
      p.offset[kY] = first * l.y[1];
      p.offset[kW] = first * l.w[0];
      p.offset[kB] = first;
    });
  } else {
    parts.push_back(Part{c});
  }
  return parts;
}

void run(Kind kind, const ConvDims& c, const ConvLayout& l, const std::vector<const void*>& ptrs) {
  try {
    const int threads = num_threads();
    const std::vector<Part> parts = parts_of(kind, c, l, threads);
    const std::vector<Role> roles = roles_of(kind);
    // Parts of a batch each write the whole weight gradient: all but the first into a
    // buffer of their own, summed after.
    const bool partial_sums = kind == Kind::BackwardWeights && c.n >= threads && parts.size() > 1;
    const int64_t wsize = c.oc * (c.c / c.groups) *
                          std::accumulate(c.kernel.begin(), c.kernel.end(), int64_t(1), std::multiplies<>());
    std::vector<std::vector<float>> partial;
    Split sp;
    for (size_t i = 0; i < parts.size(); ++i) {
      sp.plans.push_back(&plan_for(kind, parts[i].dims, l));
      std::vector<const void*> q = ptrs;
      for (size_t k = 0; k < q.size(); ++k)
        if (q[k]) q[k] = static_cast<const float*>(q[k]) + parts[i].offset[roles[k]];
      if (partial_sums && i > 0) q.back() = partial.emplace_back(size_t(wsize)).data();
      sp.ptrs.push_back(std::move(q));
    }
    sp.errors.resize(sp.plans.size());
    char* bufs[1] = {reinterpret_cast<char*>(&sp)};
    if (parts.size() == 1)
      run_parts(bufs, 0, 1);
    else
      run_parallel(run_parts, bufs, int64_t(parts.size()), 1);
    for (const std::string& err : sp.errors)
      if (!err.empty()) throw std::runtime_error("loom: oneDNN convolution failed: " + err);
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
