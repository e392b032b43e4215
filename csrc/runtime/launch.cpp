// Running one kernel: lower, collapse, render, compile (cached), run, report faults.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "codegen/kernel.h"
#include "core/fault.h"
#include "core/metrics.h"
#include "runtime/compiler.h"
#include "runtime/thread_pool.h"

namespace loom {

namespace {

// NOTE [Scalar arguments]: float constants come from Python scalars that change from call
// to call (an optimizer's bias corrections change every step, a learning-rate schedule
// every epoch). Baked into the source, each new value would compile a new kernel; as an
// argument slot (as in batched kernels) the source, and so the compiled kernel, is shared.
// Float32/Float64 only: reduced floats render through their own rounding, and integers
// take part in index arithmetic that the compiler should see as constants.
void float_consts_as_arguments(LKernel& k) {
  if (k.batched) return;
  for (LNode& n : k.nodes) {
    if (n.op != Op::Const || n.slot >= 0 || (n.dtype != DType::Float32 && n.dtype != DType::Float64))
      continue;
    const double d = std::get<Scalar>(n.arg).to_double();
    int64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    n.slot = int(k.slot_values.size());
    k.slot_values.push_back(bits);
  }
}

// rows: a batched kernel's argument table, one row per store.
void run_kernel(LKernel& k, const NodeRef& value, const std::string& what,
                const std::vector<int64_t>* rows = nullptr) {
  collapse_loops(k);
  if (k.prologue) collapse_loops(*k.prologue);
  std::string src = render_c(k);
  const int dbg = debug_level();
  if (dbg >= 5 && value) std::fprintf(stderr, "loom: graph\n%s", graph_str(value).c_str());
  if (dbg >= 3)
    std::fprintf(stderr, "loom: schedule %s\n%s", what.c_str(), lkernel_str(k).c_str());
  const CompiledKernel& ck = compile_kernel(src);
  if (dbg >= 4) std::fprintf(stderr, "loom: %s (%s)\n%s", ck.name.c_str(),
                             ck.source_path.c_str(), src.c_str());
  int64_t fault[2] = {0, 0};
  std::vector<char*> bufs;
  for (const auto& m : k.params) bufs.push_back(static_cast<char*>(m->data));
  bufs.push_back(reinterpret_cast<char*>(fault));
  if (rows) bufs.push_back(reinterpret_cast<char*>(const_cast<int64_t*>(rows->data())));
  else if (!k.slot_values.empty()) bufs.push_back(reinterpret_cast<char*>(k.slot_values.data()));
  // The outermost output loop is split across threads; a scatter runs in order on one.
  int64_t outer = 1, inner_work = 1;
  bool first = true;
  for (size_t v = 0; v < k.var_size.size(); ++v) {
    if (k.is_output_var[v] && int(v) != k.scan_var && first) {
      outer = k.var_size[v];
      first = false;
    } else {
      inner_work *= k.var_size[v];
    }
  }
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(inner_work, 1));
  if (k.out_dyn >= 0) grain = std::max<int64_t>(outer, 1);
  if (rows) {  // the stores of a batch run in order
    outer = int64_t(rows->size() / std::max<size_t>(k.slot_values.size(), 1));
    grain = std::max<int64_t>(outer, 1);
  }
  auto t0 = std::chrono::steady_clock::now();
  run_parallel(ck.fn, bufs.data(), outer, grain);
  metrics().kernels_run++;
  if (dbg >= 2) {
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "loom: kernel %s %s %zu nodes %.1f us\n", ck.name.c_str(), what.c_str(),
                 k.nodes.size(), us);
  }
  if (fault[0] > 0) raise_fault(k.checks.at(size_t(fault[0] - 1)), fault[1]);
}

}  // namespace

void run_store_kernel(const View& out, DType dtype, const NodeRef& value,
                      const std::shared_ptr<Memory>& out_mem) {
  if (out.numel() == 0) return;
  LKernel k = lower_store(out, dtype, value, out_mem);
  float_consts_as_arguments(k);
  run_kernel(k, value, std::string("store ") + dtype_name(dtype) + " " + out.str());
}

void run_batched_kernel(LKernel first, const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> table;
  table.reserve(rows.size() * first.slot_values.size());
  for (const auto& r : rows) table.insert(table.end(), r.begin(), r.end());
  run_kernel(first, nullptr, "batch of " + std::to_string(rows.size()) + " stores " +
                                 dtype_name(first.out_dtype), &table);
}

void run_scatter_kernel(DType dtype, const NodeRef& value, const NodeRef& index, int combine,
                        const std::shared_ptr<Memory>& out_mem) {
  if (numel(index->shape) == 0) return;
  LKernel k = lower_scatter(dtype, value, index, combine, out_mem);
  float_consts_as_arguments(k);
  run_kernel(k, value, std::string("scatter ") + dtype_name(dtype));
}

}  // namespace loom
