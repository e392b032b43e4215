// Running one kernel: lower, collapse, render, compile (cached), run, report faults; or,
// for a graph run before, its plan (NOTE [Kernel plans]).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "codegen/kernel.h"
#include "core/fault.h"
#include "core/metrics.h"
#include "runtime/compiler.h"
#include "runtime/disk_cache.h"
#include "runtime/executor.h"
#include "runtime/plan.h"
#include "runtime/thread_pool.h"

namespace loom {

namespace {

// NOTE [Scalar arguments]: float constants come from Python scalars that change from call
// to call (an optimizer's bias corrections change every step, a learning-rate schedule
// every epoch). Baked into the source, each new value would compile a new kernel; as an
// argument slot (as in batched kernels) the source, and so the compiled kernel, is shared.
// Float32/Float64 only: reduced floats render through their own rounding, and integers
// take part in index arithmetic that the compiler should see as constants.
//
// NOTE [Random arguments]: so do a random node's seed and offset, which move on with every
// draw: dropout compiled a kernel per call (16-21 ms each, and a file in the disk cache).
// The offset slot also takes the constant part of the node's index (a loop reading rand's
// rows x[t] one by one: NOTE [Rebased buffers] in lower.cpp), which the plan adds to the
// offset it binds (KernelPlan::slot_add).
void float_consts_as_arguments(LKernel& k) {
  if (k.batched) return;
  for (LNode& n : k.nodes) {
    if ((n.op == Op::RandUniform || n.op == Op::RandNormal) && n.slot < 0) {
      const RandArg& r = std::get<RandArg>(n.arg);
      n.slot = int(k.slot_values.size());
      k.slot_values.push_back(int64_t(r.seed));
      k.slot_values.push_back(int64_t(r.offset + uint64_t(n.index.c)));
      n.index.c = 0;
      continue;
    }
    if (n.op != Op::Const || n.slot >= 0 || (n.dtype != DType::Float32 && n.dtype != DType::Float64))
      continue;
    const double d = std::get<Scalar>(n.arg).to_double();
    int64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    n.slot = int(k.slot_values.size());
    k.slot_values.push_back(bits);
  }
}

// Compiles `k` (collapsed) and says how its outer loop is split; buffers and slots bind to
// the kernel's own params and slot_values in order.
KernelPlan make_plan(LKernel& k, const NodeRef& value, const std::function<std::string()>& what) {
  collapse_loops(k);
  if (k.prologue) collapse_loops(*k.prologue);
  KernelPlan p;
  const std::vector<int64_t> base = rebase_params(k);
  for (size_t i = 0; i < base.size(); ++i)
    p.param_offset.push_back(base[i] * int64_t(itemsize(k.param_dtype[i])));
  std::string src = render_c(k);
  const int dbg = debug_level();
  if (dbg >= 5 && value) std::fprintf(stderr, "loom: graph\n%s", graph_str(value).c_str());
  if (dbg >= 3) std::fprintf(stderr, "loom: schedule %s\n%s", what().c_str(), lkernel_str(k).c_str());
  int64_t points = 1;
  for (int64_t n : k.var_size) points *= n;
  const int64_t work = points * int64_t(k.nodes.size()), limit = quick_work_limit();
  p.kernel = compile_kernel(src, limit > 0 && work < limit);  // NOTE [Compile tiers]
  p.source_hash = checksum64(src.data(), src.size());
  if (dbg >= 4)
    std::fprintf(stderr, "loom: %s (%s)\n%s", p.kernel->name.c_str(),
                 p.kernel->source_path.c_str(), src.c_str());
  // The outermost output loop is split across threads; a scatter runs in order on one,
  // unless its rows are disjoint (NOTE [Parallel scatters]).
  int64_t inner_work = 1;
  bool first = true;
  for (size_t v = 0; v < k.var_size.size(); ++v) {
    if (k.is_output_var[v] && int(v) != k.scan_var && first) {
      p.outer = k.var_size[v];
      first = false;
    } else {
      inner_work *= k.var_size[v];
    }
  }
  p.grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(inner_work, 1));
  p.ordered = k.out_dyn >= 0 && !scatter_rows_disjoint(k);
  // Whole reductions are computed by each call (NOTE [Whole reductions] in lower.cpp).
  const bool whole = k.out_dyn < 0 && !k.batched && k.scan_var < 0 && place_reductions(k).whole;
  if (p.ordered || whole) p.grain = std::max<int64_t>(p.outer, 1);
  p.two_pass = scatter_two_pass(k);
  p.checks = k.checks;
  p.nodes = k.nodes.size();
  p.recomputes = recomputes_reductions(k);
  for (size_t i = 0; i < k.params.size(); ++i) p.param_mem.push_back(int(i));
  for (size_t i = 0; i < k.slot_values.size(); ++i) p.slot_const.push_back(int(i));
  p.slot_add.assign(k.slot_values.size(), 0);
  return p;
}

// params: the kernel's buffers; args: its argument slots (or a batch's row table). A
// kernel that may fault is waited for, with every task issued before it (NOTE
// [Asynchronous execution]); the others are issued to the executor. Returns the task's
// number (0 when it was waited for).
uint64_t launch(const KernelPlan& p, std::vector<char*> params, std::vector<int64_t> args,
                const std::function<std::string()>& what) {
  metrics().kernels_run++;
  if (p.ordered) metrics().ordered_scatters++;
  // NOTE [Compile tiers]: the runs are the kernel's, over all the plans that share it.
  if (p.kernel->quick && quick_runs() > 0 && ++p.kernel->runs >= quick_runs())
    p.kernel = optimized_kernel(p.kernel);
  if (p.recomputes) {
    metrics().reductions_recomputed++;
    if (debug_level() >= 2)
      std::fprintf(stderr, "loom: kernel %s recomputes a reduction\n", p.kernel->name.c_str());
  }
  // For LOOM_DEBUG=2: the kernel's name and what it computes.
  std::string label;
  if (debug_level() >= 2) label = p.kernel->name + " " + what() + " " + std::to_string(p.nodes) + " nodes";
  auto run = [fn = p.kernel->fn, params = std::move(params), args = std::move(args), outer = p.outer,
              grain = p.grain, two_pass = p.two_pass, label = std::move(label)]() mutable {
    // The fault's check number and value; fault[2]: the pass of a two-pass scatter.
    int64_t fault[3] = {0, 0, 0};
    params.push_back(reinterpret_cast<char*>(fault));
    if (!args.empty()) params.push_back(reinterpret_cast<char*>(args.data()));
    auto t0 = std::chrono::steady_clock::now();
    run_parallel(fn, params.data(), outer, grain);
    if (two_pass && fault[0] == 0) {
      fault[2] = 1;
      run_parallel(fn, params.data(), outer, grain);
    }
    if (!label.empty()) {
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "loom: kernel %s %.1f us\n", label.c_str(), us);
    }
    return std::make_pair(fault[0], fault[1]);
  };
  if (p.checks.empty()) return submit([run = std::move(run)]() mutable { run(); });
  // Issued and waited for, so that it runs on the executor with the host helping: run here,
  // it had the pool to itself, which on two cores is no worker at all (an int64 division
  // over 1M elements took 1.7 ms on two threads as on one).
  std::pair<int64_t, int64_t> fault{0, 0};
  await_task(submit([&fault, run = std::move(run)]() mutable { fault = run(); }));
  if (fault.first > 0) raise_fault(p.checks.at(size_t(fault.first - 1)), fault.second);
  return 0;
}

// Runs `k` on its own buffers and slots.
uint64_t run_lowered(LKernel& k, const NodeRef& value, const std::function<std::string()>& what) {
  KernelPlan p = make_plan(k, value, what);
  std::vector<char*> params;
  for (size_t i = 0; i < k.params.size(); ++i)
    params.push_back(static_cast<char*>(k.params[i]->data) + p.param_offset[i]);
  return launch(p, std::move(params), k.slot_values, what);
}

// Re-expresses a plan made from `k` in terms of a binding keyed from the same graph;
// false when some buffer or constant of `k` is not in the binding.
bool bind_plan(KernelPlan& p, const LKernel& k, const PlanBinding& b) {
  for (size_t i = 0; i < k.params.size(); ++i) {
    auto it = std::find(b.mems.begin(), b.mems.end(), k.params[i].get());
    if (it == b.mems.end()) return false;
    p.param_mem[i] = int(it - b.mems.begin());
  }
  for (const LNode& n : k.nodes) {
    const bool rand = n.op == Op::RandUniform || n.op == Op::RandNormal;
    if ((n.op != Op::Const && !rand) || n.slot < 0) continue;
    auto it = std::find(b.const_nodes.begin(), b.const_nodes.end(), n.origin);
    if (it == b.const_nodes.end()) return false;
    p.slot_const[size_t(n.slot)] = int(it - b.const_nodes.begin());
    if (!rand) continue;
    p.slot_const[size_t(n.slot) + 1] = int(it - b.const_nodes.begin()) + 1;
    p.slot_add[size_t(n.slot) + 1] =
        int64_t(uint64_t(k.slot_values[size_t(n.slot) + 1]) - std::get<RandArg>(n.arg).offset);
  }
  return true;
}

bool same_plan(const KernelPlan& a, const KernelPlan& b) {
  return a.source_hash == b.source_hash && a.param_mem == b.param_mem &&
         a.param_offset == b.param_offset && a.slot_add == b.slot_add &&
         a.slot_const == b.slot_const && a.checks == b.checks && a.outer == b.outer && a.grain == b.grain && a.placed == b.placed &&
         a.recomputes == b.recomputes;
}

uint64_t run_plan(const KernelPlan& p, const PlanBinding& b, const std::function<std::string()>& what) {
  std::vector<char*> params;
  std::vector<int64_t> args;
  params.reserve(p.param_mem.size() + 2);
  args.reserve(p.slot_const.size());
  for (size_t i = 0; i < p.param_mem.size(); ++i)
    params.push_back(static_cast<char*>(b.mems[size_t(p.param_mem[i])]->data) + p.param_offset[i]);
  for (size_t i = 0; i < p.slot_const.size(); ++i)
    args.push_back(int64_t(uint64_t(b.consts[size_t(p.slot_const[i])]) + uint64_t(p.slot_add[i])));
  return launch(p, std::move(params), std::move(args), what);
}

// A kernel through the plan cache: `lower` lowers it when no plan (or LOOM_CHECK_PLANS).
template <typename LowerFn>
uint64_t run_cached(PlanKind kind, const View& out, DType dtype, int64_t extra,
                const std::vector<const Node*>& roots, Memory* out_mem, const NodeRef& value,
                LowerFn lower, const std::function<std::string()>& what,
                const std::vector<ExtraStore>& outputs = {}) {
  // Kept between calls for their capacity; nothing here runs a kernel plan reentrantly.
  thread_local PlanKey key;
  thread_local PlanBinding b;
  const bool keyed = plans_enabled() && debug_level() < 3 &&
                     plan_key(kind, out, dtype, extra, roots, out_mem, key, b, outputs);
  const KernelPlan* hit = keyed ? find_plan(key) : nullptr;
  if (hit && !check_plans()) {
    metrics().plan_hits++;
    return run_plan(*hit, b, what);
  }
  LKernel k = lower();
  float_consts_as_arguments(k);
  if (!keyed) return run_lowered(k, value, what);
  KernelPlan p = make_plan(k, value, what);
  if (!bind_plan(p, k, b)) throw std::logic_error("loom: a kernel plan does not cover its kernel");
  if (hit) {  // LOOM_CHECK_PLANS: the plan must be the one made afresh; run the cached one
    if (!same_plan(*hit, p))
      throw std::logic_error("loom: a cached kernel plan differs from a fresh one (" +
                             hit->kernel->name + " vs " + p.kernel->name + ")");
    metrics().plan_hits++;
    return run_plan(*hit, b, what);
  }
  add_plan(key, p);
  return run_plan(p, b, what);
}

}  // namespace

void run_store_kernel(const View& out, DType dtype, const NodeRef& value,
                      const std::shared_ptr<Memory>& out_mem, const std::vector<ExtraStore>& extra) {
  if (out.numel() == 0) return;
  const uint64_t task = run_cached(
      PlanKind::Store, out, dtype, 0, {value.get()}, out_mem.get(), value,
      [&] { return lower_store(out, dtype, value, out_mem, extra); },
      [&] {
        std::string s = std::string("store ") + dtype_name(dtype) + " " + out.str();
        for (const ExtraStore& e : extra) s += " and " + std::string(dtype_name(e.dtype));
        return s;
      },
      extra);
  out_mem->written_by = task;
  for (const ExtraStore& e : extra) e.mem->written_by = task;
}

bool reductions_placed(const View& out, DType dtype, const NodeRef& value) {
  thread_local PlanKey key;
  thread_local PlanBinding b;
  const bool keyed = plans_enabled() &&
                     plan_key(PlanKind::Placement, out, dtype, 0, {value.get()}, nullptr, key, b);
  const KernelPlan* hit = keyed ? find_plan(key) : nullptr;
  if (hit && !check_plans()) return hit->placed;
  LKernel k = lower_store(out, dtype, value, nullptr);
  collapse_loops(k);
  KernelPlan p;
  p.placed = place_reductions(k).ok;
  if (hit && hit->placed != p.placed)
    throw std::logic_error("loom: a cached reduction placement differs from a fresh one");
  if (keyed) add_plan(key, p);
  return p.placed;
}

void run_batched_kernel(LKernel first, const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> table;
  table.reserve(rows.size() * first.slot_values.size());
  for (const auto& r : rows) table.insert(table.end(), r.begin(), r.end());
  auto what = [&] {
    return "batch of " + std::to_string(rows.size()) + " stores " + dtype_name(first.out_dtype);
  };
  KernelPlan p = make_plan(first, nullptr, what);
  // The stores of a batch run in order, one row each.
  p.outer = int64_t(rows.size());
  p.grain = std::max<int64_t>(p.outer, 1);
  std::vector<char*> params;
  for (const auto& m : first.params) params.push_back(static_cast<char*>(m->data));
  first.params[0]->written_by = launch(p, std::move(params), std::move(table), what);
}

void run_scatter_kernel(DType dtype, const NodeRef& value, const NodeRef& index, int combine,
                        const std::shared_ptr<Memory>& out_mem) {
  if (numel(index->shape) == 0) return;
  out_mem->written_by = run_cached(
      PlanKind::Scatter, View{}, dtype, combine, {index.get(), value.get()}, out_mem.get(),
      value, [&] { return lower_scatter(dtype, value, index, combine, out_mem); },
      [&] { return std::string("scatter ") + dtype_name(dtype); });
}

}  // namespace loom
