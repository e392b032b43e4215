// Kernel plans: a kernel lowered, rendered and compiled once, rerun from a key of its graph.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "codegen/kernel.h"
#include "core/node.h"
#include "runtime/compiler.h"

namespace loom {

// NOTE [Kernel plans]: a training step realizes the same few hundred kernels every step,
// and lowering, rendering and looking up each one's source cost more host time than many
// of them take to run (a third of a small GPT step). A plan is what a run needs once the
// kernel is compiled: the kernel, where each of its buffers and argument slots comes from,
// and how its outer loop is split. Its key is the graph as lowering sees it: each node's
// op, dtype, shape, argument and sources (a shared node as a back reference), the output
// view, and for each load the buffer it reads by first appearance (the output's buffer
// first), so that two loads of one buffer, or a load of the buffer being written, are
// part of the key while the addresses are not. Float32/Float64 constants are argument
// slots (NOTE [Scalar arguments]), so their values are not in the key either; which of
// them are equal is, since the renderer shares expressions over equal constants.
// LOOM_CHECK_PLANS=1 lowers and renders again at every hit and throws if the plan it
// would make differs; the test suite runs that way.

struct PlanKey {
  std::vector<int64_t> words;
  uint64_t hash = 0;
  bool operator==(const PlanKey& o) const { return hash == o.hash && words == o.words; }
};

// What one run binds: buffers and float constants in order of first appearance.
struct PlanBinding {
  std::vector<Memory*> mems;  // mems[0]: the output's
  std::vector<int64_t> consts;  // the constants' values, as double bits
  std::vector<const Node*> const_nodes;
};

struct KernelPlan {
  // Replaced by its optimized kernel where a quick one has run enough (NOTE [Compile
  // tiers], runtime/compiler.cpp).
  mutable std::shared_ptr<const CompiledKernel> kernel;
  uint64_t source_hash = 0;     // of the kernel's source, whichever tier runs it
  std::vector<int> param_mem;   // the kernel's buffer i is binding.mems[param_mem[i]]
  std::vector<int64_t> param_offset;  // read from that many bytes in (NOTE [Rebased buffers])
  std::vector<int> slot_const;  // its argument slot i is binding.consts[slot_const[i]]
  std::vector<int64_t> slot_add;  // plus this (a random offset's index: launch.cpp)
  std::vector<int> checks;      // fault messages of its Check nodes
  int64_t outer = 1, grain = 1;
  bool two_pass = false;        // a scatter checking, then writing (NOTE [Parallel scatters])
  bool ordered = false;         // a scatter in order on one thread (metrics().ordered_scatters)
  size_t nodes = 0;             // for LOOM_DEBUG
  bool placed = true;           // PlanKind::Placement: place_reductions(...).ok
  bool recomputes = false;      // recomputes_reductions (metrics().reductions_recomputed)
};

enum class PlanKind : int64_t { Store, Scatter, Placement };

// The key of a kernel over `roots` written through `out` (a store) or at computed indices
// (a scatter, `extra` its combine kind) into `out_mem`, replacing what `key` and `binding`
// held (callers reuse them: a training step keys hundreds of kernels). False when lowering
// would reject the graph (a load of unrealized storage): lowering then reports it.
// `outputs`: the stores a store kernel runs beside its own (lower_store).
bool plan_key(PlanKind kind, const View& out, DType dtype, int64_t extra,
              const std::vector<const Node*>& roots, Memory* out_mem, PlanKey& key,
              PlanBinding& binding, const std::vector<ExtraStore>& outputs = {});

// The cache of plans, bounded (least recently used out). Plans are used under the engine
// lock (core/graph.h).
const KernelPlan* find_plan(const PlanKey& key);
void add_plan(const PlanKey& key, KernelPlan plan);
bool check_plans();  // LOOM_CHECK_PLANS=1
bool plans_enabled();  // LOOM_PLANS=0 turns plans off

}  // namespace loom
