#include "schedule/realize.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "codegen/kernel.h"
#include "core/extern.h"
#include "core/fault.h"
#include "core/metrics.h"
#include "core/node_map.h"
#include "runtime/executor.h"
#include "runtime/thread_pool.h"
#include "schedule/fuse.h"
#include "schedule/reuse.h"

namespace loom {

namespace {

// Whether the DAG holds a Check (a kernel that may fault), and one inside a reduction.
struct CheckScan {
  bool any = false, in_reduce = false;
  NodeSet seen[2];
  void visit(const Node* n, bool under_reduce) {
    if (!seen[under_reduce].insert(n)) return;
    if (n->op == Op::Check) {
      any = true;
      in_reduce |= under_reduce;
    }
    under_reduce |= n->op == Op::Reduce || n->op == Op::Scan;
    if (n->op == Op::Load) return;
    for (size_t i = n->op == Op::Gather ? 1 : 0; i < n->src.size(); ++i)
      visit(n->src[i].get(), under_reduce);
  }
};

std::shared_ptr<Memory> copy_of(const Node* flat) {
  auto mem = allocate_memory(size_t(flat->shape[0]));
  if (flat->realized) {
    mem->written_by =
        submit([to = mem->data, from = flat->realized->data, n = mem->nbytes] { std::memcpy(to, from, n); });
  }
  return mem;
}

bool elementwise_op(Op op) {
  const OpKind kind = op_kind(op);
  return op != Op::Check &&
         (kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Ternary);
}

// NOTE [Sibling stores]: an optimizer step leaves, per parameter, pending whole writes of
// buffers that live on (the clipped gradient, the two moments, the parameter), each read
// by the next at its own elements. Each was a kernel of its own (NOTE [Live state]): four
// passes over the same elements, four kernels to fuse and launch. A store kernel now also
// stores, beside its output, every such write that its value reads elementwise at the
// write's own elements (in place where NOTE [Reinplacing] allows), and those writes' own
// such reads in turn. A sibling is a pending store covering its buffer, of the output's
// sizes, whose value is elementwise (no reductions, gathers or checks); covering its
// buffer, it needs nothing below it but what its value reads. The walk goes through dead
// buffers' writes at the same elements too (Adam's denominator), which fusion inlines.
// A GPT step with clipping and AdamW: 4 -> 1 kernel per parameter, 253 -> 157 per step.
constexpr size_t kMaxSiblings = 8;
constexpr size_t kMaxSiblingNodes = 64;

bool elementwise_value(const Node* value) {
  return walk_within(value, kMaxSiblingNodes, [](const Node* n, std::vector<const Node*>& more) {
    if (n->op == Op::Load || n->op == Op::Const || n->op == Op::Iota) return true;
    if (!elementwise_op(n->op) && n->op != Op::Reindex) return false;
    for (const auto& src : n->src) more.push_back(src.get());
    return true;
  });
}

std::vector<SiblingStore> sibling_stores(const Node* v) {
  std::vector<SiblingStore> out;
  NodeSet below;  // v's own base chain is realized by v's path, not here
  for (const Node* b = v->src[0].get();
       !b->realized && (b->op == Op::Store || b->op == Op::Scatter); b = b->src[0].get())
    below.insert(b);
  const Shape& sizes = v->view().sizes;
  walk_within(v->src[1].get(), SIZE_MAX, [&](const Node* n, std::vector<const Node*>& more) {
    if (n->op == Op::Load) {
      const Node* flat = n->src[0].get();
      if (flat->op != Op::Store || flat->realized || flat == v || below.count(flat) ||
          flat->dtype != n->dtype || !(flat->view() == n->view()) || flat->view().sizes != sizes ||
          !is_dense_cover(flat->view(), flat->shape[0] / itemsize(flat->dtype)))
        return true;
      if (!flat->owner.expired()) {
        if (!elementwise_value(flat->src[1].get())) return true;
        out.push_back({std::const_pointer_cast<Node>(flat->shared_from_this()), nullptr, nullptr});
      }
      more.push_back(flat->src[1].get());
    } else if (elementwise_op(n->op)) {
      for (const auto& src : n->src) more.push_back(src.get());
    }
    return out.size() < kMaxSiblings;
  });
  return out;
}

// NOTE [Faults]: a kernel that stops on a failed Check must leave the storage as it was
// before the faulting write. Writes that may fault therefore compute into fresh memory
// (or, for a scatter, check every index before writing); on a fault the write node is
// realized as its base value, so the write is dropped, and the fault propagates.
void realize_store(const NodeRef& v) {
  // A whole value computed by reductions is kept for its later readers (Node::stored):
  // watched weakly, since holding it would count as a reader (NOTE [Live state]).
  std::weak_ptr<Node> whole;
  const NodeRef& value = v->src[1];
  if (v->view() == View::contiguous(value->shape) && v->dtype == value->dtype &&
      v->shape[0] == numel(value->shape) * itemsize(value->dtype) && computes_reduction(value))
    whole = value;
  // Fuse first: inlining or realizing producers may take other buffers' values.
  bool inlined = false;
  // Not into scratch storage that fusion made: the fusion that made it stored the shared
  // parts first.
  const bool shared = !whole.expired() && !is_scratch(v.get());
  std::vector<CohortValue> cohort;
  // Siblings only where v's base is not realized between this fusion and the kernel.
  bool covers = is_dense_cover(v->view(), v->shape[0] / itemsize(v->dtype));
  std::vector<SiblingStore> siblings;
  if (covers || v->src[0]->realized || v->src[0]->op == Op::Empty)
    siblings = sibling_stores(v.get());
  NodeRef expr = fuse(v->src[1], nullptr, true, &inlined, shared, &cohort, &siblings);
  // A member shaped as this store is laid out as it is (max pooling's indices beside its
  // channels-last values), so that the kernel writes both in one order and their readers
  // read both so; any other is contiguous.
  auto cohort_view = [&](const CohortValue& c) {
    const Shape& s = c.value->shape;
    return s == v->view().sizes && c.member->shape == s ? dense_in_order_of(v->view())
                                                        : View::contiguous(s);
  };
  auto placed = [&] {
    if (!reductions_placed(v->view(), v->dtype, expr)) return false;
    for (const CohortValue& c : cohort)
      if (!reductions_placed(cohort_view(c), c.value->dtype, c.value))
        return false;
    return true;
  };
  if (inlined) {
    if (!placed()) {
      expr.reset();  // its references would count as readers outside (NOTE [Live state])
      cohort.clear();
      for (SiblingStore& sib : siblings) sib.value.reset();
      expr = fuse(v->src[1], nullptr, false, nullptr, shared, &cohort, &siblings);
    }
  }
  // A sibling that a fusion inside this one realized is read from its storage.
  std::vector<SiblingStore> pending;
  for (SiblingStore& sib : siblings)
    if (sib.value && !sib.flat->realized) pending.push_back(std::move(sib));
  siblings = std::move(pending);
  std::vector<ExtraStore> extra;
  for (const CohortValue& c : cohort) {
    const NodeRef& x = c.value;
    extra.push_back({cohort_view(c), x->dtype, x,
                     allocate_memory(size_t(numel(x->shape) * itemsize(x->dtype)))});
  }
  v->src[1] = expr;
  expr.reset();
  for (SiblingStore& sib : siblings) sib.flat->src[1] = std::move(sib.value);  // as v's
  const Node* base = v->src[0].get();
  // The values stored beside this one read the old contents too (and may fault).
  std::vector<const Node*> exprs{v->src[1].get()};
  for (const CohortValue& c : cohort) exprs.push_back(c.value.get());
  for (const SiblingStore& sib : siblings) exprs.push_back(sib.flat->src[1].get());
  CheckScan checks;
  for (const Node* e : exprs) checks.visit(e, false);
  // A kernel that may fault leaves the siblings' old contents alone (NOTE [Faults]).
  for (SiblingStore& sib : siblings) {
    const Node* old = sib.flat->src[0].get();
    if (!checks.any)
      sib.mem = old->realized && can_reuse_base(sib.flat.get(), old, exprs)
                    ? old->realized
                    : reused_memory(sib.flat.get(), exprs);
    if (!sib.mem) sib.mem = allocate_memory(size_t(sib.flat->shape[0]));
  }
  std::shared_ptr<Memory> mem;
  bool loaded = false;  // whether the kernel would read the memory it writes
  if (!checks.any && base->realized && can_reuse_base(v.get(), base, exprs, true, {}, &loaded) &&
      !(covers && loaded && has_strict_ops(exprs))) {  // NOTE [Strict kernels]
    mem = base->realized;
  } else if (covers || (base->op == Op::Empty && !base->realized)) {
    // Every byte that matters is stored.
    if (covers && !checks.any) mem = reused_memory(v.get(), exprs);
    if (!mem) mem = allocate_memory(size_t(v->shape[0]));
  } else {
    realize_value(v->src[0]);
    if (!checks.any && can_reuse_base(v.get(), base, exprs))
      mem = base->realized;
    else
      mem = copy_of(base);
  }
  for (const SiblingStore& sib : siblings)
    extra.push_back({sib.flat->view(), sib.flat->dtype, sib.flat->src[1], sib.mem});
  try {
    run_store_kernel(v->view(), v->dtype, v->src[1], mem, extra);
  } catch (const KernelFault&) {
    realize_value(v->src[0]);
    set_realized(v, copy_of(v->src[0].get()));
    throw;
  }
  set_realized(v, std::move(mem));
  for (size_t i = 0; i < cohort.size(); ++i) set_cohort_stored(cohort[i], extra[i].view, extra[i].mem);
  extra.clear();
  for (SiblingStore& sib : siblings) set_realized(sib.flat, std::move(sib.mem));
  metrics().cohort_stores += int64_t(cohort.size());
  metrics().sibling_stores += int64_t(siblings.size());
  if (NodeRef w = whole.lock()) w->stored = make_node(Op::Load, v->dtype, w->shape, {v}, v->view());
}

void realize_scatter(const NodeRef& v) {
  v->src[1] = fuse(v->src[1]);
  v->src[2] = fuse(v->src[2]);
  const Node* base = v->src[0].get();
  CheckScan checks;
  checks.visit(v->src[1].get(), false);
  checks.visit(v->src[2].get(), false);
  realize_value(v->src[0]);
  std::shared_ptr<Memory> mem;
  if (!checks.in_reduce && can_reuse_base(v.get(), base, {v->src[1].get(), v->src[2].get()}))
    mem = base->realized;
  else
    mem = copy_of(base);
  try {
    run_scatter_kernel(v->dtype, v->src[1], v->src[2], int(v->int_arg()), mem);
  } catch (const KernelFault&) {
    set_realized(v, checks.in_reduce ? copy_of(base) : std::move(mem));
    throw;
  }
  set_realized(v, std::move(mem));
}

// See NOTE [Extern calls]: inputs computed into memory the function can read, one run
// for all outputs of the call.
void realize_extern(const NodeRef& n) {
  const ExternArg& arg = *std::get<std::shared_ptr<ExternArg>>(n->arg);
  ExternCall& call = *arg.call;
  if (!call.done) {
    std::vector<ExternInput> in;
    for (size_t i = 0; i < n->src.size(); ++i) {
      const NodeRef& src = n->src[i];
      NodeRef v = fuse(src);
      if (v->op == Op::Load && v->src[0]->realized &&
          (!call.accepts || call.accepts(i, v->view()))) {
        in.push_back({v->src[0]->realized, v->view(), v->dtype});
        continue;
      }
      // A read of a whole pending value in any dim order (a transposed gradient into a
      // weight gradient's product) realizes that value as it lies and hands the function
      // the view, when the function takes it: the store is contiguous, not a transposing
      // one, and the value's other readers (the input gradient's product, the bias
      // gradient) read it stored.
      const Node* flat = src->op == Op::Load ? src->src[0].get() : nullptr;
      if (flat && !flat->realized && flat->op == Op::Store && flat->dtype == src->dtype &&
          is_dense_cover(src->view(), flat->shape[0] / itemsize(flat->dtype)) &&
          (!call.accepts || call.accepts(i, src->view()))) {
        v.reset();
        realize_value(src->src[0]);
        in.push_back({flat->realized, src->view(), src->dtype});
        continue;
      }
      View dense = View::contiguous(v->shape);
      auto mem =
          allocate_memory(size_t(std::max<int64_t>(numel(v->shape), 1) * itemsize(v->dtype)));
      run_store_kernel(dense, v->dtype, v, mem);
      in.push_back({mem, dense, v->dtype});
    }
    std::vector<std::shared_ptr<Memory>> out;
    for (int64_t nbytes : call.out_nbytes) out.push_back(allocate_memory(size_t(nbytes)));
    // The task borrows the blocks (borrow_memory); `in` and `out` own them until it is
    // issued, so none is handed out again before it has run.
    std::vector<ExternInput> task_in = in;
    for (ExternInput& i : task_in) i.mem = borrow_memory(*i.mem);
    std::vector<std::shared_ptr<Memory>> task_out;
    for (const auto& m : out) task_out.push_back(borrow_memory(*m));
    metrics().extern_calls++;
    const uint64_t task = submit([call = arg.call, in = std::move(task_in), out = std::move(task_out),
                                  dbg = debug_level()] {
      auto t0 = std::chrono::steady_clock::now();
      call->fn(in, out);
      if (dbg >= 2) {
        double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "loom: extern %s %.1f us\n", call->name.c_str(), us);
      }
    });
    for (const auto& m : out) m->written_by = task;
    call.results = std::move(out);
    call.done = true;
  }
  set_realized(n, std::move(call.results[size_t(arg.out)]));
}

void realize_one(const NodeRef& flat) {
  if (flat->realized) return;
  metrics().realizations++;
  switch (flat->op) {
    case Op::Empty:
      set_realized(flat, allocate_memory(size_t(flat->shape[0])));
      return;
    case Op::Store:
      realize_store(flat);
      return;
    case Op::Scatter:
      realize_scatter(flat);
      return;
    case Op::Extern:
      realize_extern(flat);
      return;
    default:
      throw std::logic_error(std::string("loom: cannot realize ") + op_name(flat->op));
  }
}

// NOTE [Batched stores]: a setitem loop leaves a chain of small stores on one buffer, each
// of which would be a kernel. Consecutive stores whose kernels differ only in constants
// and offsets run as one kernel over a table of those, in chain order, writing in place.
// A store joins only when its value is elementwise over constants, coordinates, random
// streams, realized storage and the buffer's own previous state at the stored elements (or
// at elements the store does not write), and when that previous state
// has no reader but this store (so no state between two stores of a batch is ever seen).
constexpr size_t kMaxBatchValueNodes = 64;

// Large stores run on their own, split across threads; a batch runs on one.
constexpr int64_t kMaxBatchedStoreElements = int64_t(1) << 15;

bool is_partial_store(const Node* n) {
  return n->op == Op::Store && !n->realized && n->view().numel() <= kMaxBatchedStoreElements &&
         !is_dense_cover(n->view(), n->shape[0] / itemsize(n->dtype));
}

// Loads in a batched store's value may read realized storage, the buffer's previous
// state `prev` (at the stored elements or at elements the store does not write), or a
// pending whole-storage producer of such values (a Python scalar made a tensor, `x[i-1] +
// x[i]`), which fusion inlines without running anything.
bool loads_are_batchable(const Node* value, const Node* prev, const View& view, DType dtype,
                         bool& fusable) {
  return walk_within(value, kMaxBatchValueNodes, [&](const Node* n,
                                                     std::vector<const Node*>& more) {
    if (n->op == Op::Load) {
      const Node* flat = n->src[0].get();
      if (flat == prev) {
        if (n->dtype != dtype) return false;  // the batched kernel reads p0 in one dtype
        return n->view() == view || disjoint(n->view(), view);
      }
      if (flat->realized) return true;
      // A pending producer over the whole of another storage inlines when its own value
      // qualifies (its loads of `prev` then keep their views).
      if (flat->op != Op::Store || flat->dtype != n->dtype ||
          !is_dense_cover(flat->view(), flat->shape[0] / itemsize(flat->dtype)))
        return false;
      fusable = true;
      more.push_back(flat->src[1].get());
      return true;
    }
    if (op_kind(n->op) == OpKind::Leaf)
      return n->op == Op::Const || n->op == Op::Iota || n->op == Op::RandUniform ||
             n->op == Op::RandNormal;
    if (n->op != Op::Reindex && !elementwise_op(n->op)) return false;
    for (const auto& s : n->src) more.push_back(s.get());
    return true;
  });
}

// Whether `store` (over `prev`) may join a batch; inlines its constant fills if so.
bool batchable_value(Node* store, const Node* prev) {
  bool fusable = false;
  if (!loads_are_batchable(store->src[1].get(), prev, store->view(), store->dtype, fusable))
    return false;
  if (fusable) store->src[1] = fuse(store->src[1], prev);
  return true;
}

// Realizes chain[i] (bottom) and the stores above it as one batched kernel when at least
// two of them qualify; returns how many were realized (0: none, not batchable).
// A whole-storage store computed from coordinates and constants alone (zeros, full,
// arange), small enough to run on one thread ahead of a batch.
bool is_small_fill(const Node* n) {
  if (n->op != Op::Store || n->realized || numel(n->view().sizes) > (int64_t(1) << 16) ||
      !is_dense_cover(n->view(), n->shape[0] / itemsize(n->dtype)))
    return false;
  return walk_within(n->src[1].get(), kMaxBatchValueNodes,
                     [](const Node* v, std::vector<const Node*>& more) {
                       const bool ok = v->op == Op::Const || v->op == Op::Iota ||
                                       v->op == Op::Reindex || elementwise_op(v->op);
                       for (const auto& s : v->src) more.push_back(s.get());
                       return ok;
                     });
}

// Realizes chain[i] (bottom) and the stores above it as one batched kernel when at least
// two of them qualify, a small fill below them counting as one; returns how many were
// realized (0: not batchable).
size_t realize_batch(const std::vector<Node*>& chain, size_t i) {
  Node* fill = i > 0 && is_small_fill(chain[i]) ? chain[i] : nullptr;
  size_t b = fill ? i - 1 : i;
  Node* first = chain[b];
  if (b == 0 && !fill) return 0;
  if (!is_partial_store(first)) return 0;
  const NodeRef& base = first->src[0];
  if (!fill && !base->realized && base->op != Op::Empty) return 0;
  const View& v0 = first->view();
  if (!batchable_value(first, base.get())) return 0;
  std::shared_ptr<Memory> placeholder;
  LKernel k = lower_batched_store(v0, first->dtype, first->src[1], placeholder, {base.get()});
  std::vector<std::vector<int64_t>> rows{k.slot_values};
  size_t top = b;  // chain index of the last store in the batch
  while (top > 0) {
    Node* next = chain[top - 1];
    Node* prev = chain[top];
    if (!is_partial_store(next) || next->dtype != first->dtype || next->view().sizes != v0.sizes ||
        next->view().strides != v0.strides || !batchable_value(next, prev) ||
        !can_reuse_base(next, prev, {next->src[1].get()}))
      break;
    LKernel kn = lower_batched_store(next->view(), next->dtype, next->src[1], placeholder, {prev});
    if (!lkernels_alike(kn, k)) break;
    rows.push_back(std::move(kn.slot_values));
    --top;
  }
  if (rows.size() + (fill ? 1 : 0) < 2) return 0;
  metrics().realizations += int64_t(rows.size() + (fill ? 1 : 0));
  std::shared_ptr<Memory> mem;
  if (fill) {
    if (!can_reuse_base(first, fill, {first->src[1].get()})) return 0;
    mem = allocate_memory(size_t(fill->shape[0]));
    k.prologue =
        std::make_shared<LKernel>(lower_store(fill->view(), fill->dtype, fill->src[1], mem));
  } else {
    if (!base->realized) realize_one(base);
    mem = can_reuse_base(first, base.get(), {first->src[1].get()}) ? base->realized
                                                                   : copy_of(base.get());
  }
  k.params[0] = mem;
  run_batched_kernel(std::move(k), rows);
  // Bottom-up, so each store drops its (already realized) base: no recursive teardown.
  for (size_t j = i + 1; j-- > top;) set_realized(chain[j]->shared_from_this(), mem);
  return i + 1 - top;
}

}  // namespace

// A buffer's value is a chain of writes over a base; they are realized bottom-up in a
// loop (a long chain of setitems must not recurse once per write). A store covering the
// whole storage ends the chain: what lies below it is never needed.
void realize_value(const NodeRef& flat) {
  // Raw pointers: reinplacing counts references, and each node is kept alive by the one
  // above it until that one is realized, after which the walk never returns to it.
  std::vector<Node*> chain;
  for (Node* n = flat.get(); !n->realized; n = n->src[0].get()) {
    chain.push_back(n);
    if (n->op != Op::Store && n->op != Op::Scatter) break;
    if (n->op == Op::Store && is_dense_cover(n->view(), n->shape[0] / itemsize(n->dtype))) break;
  }
  // Sleeping pool workers wake while this realization fuses its first kernel (NOTE
  // [Spinning pool]); a no-op when they spin.
  if (!chain.empty()) wake_workers();
  for (size_t i = chain.size(); i-- > 0;) {
    if (chain[i]->realized) continue;
    size_t done = realize_batch(chain, i);
    if (done > 0) {
      i -= done - 1;
      continue;
    }
    realize_one(chain[i]->shared_from_this());
  }
}

namespace {
const bool g_bound_installed = (set_bound_hook([](Buffer& b) { realize_value(b.value()); }), true);
}  // namespace

void realize(Buffer& b) {
  std::lock_guard<std::recursive_mutex> g(engine_mutex());
  realize_value(b.value());
}

void realize_all() {
  std::lock_guard<std::recursive_mutex> g(engine_mutex());
  for (Buffer* b : live_buffers())
    if (!b->value()->realized && b->value()->op != Op::Empty) realize_value(b->value());
  finish_tasks();
}

const void* realized_data(Buffer& b) {
  std::lock_guard<std::recursive_mutex> g(engine_mutex());
  realize_value(b.value());
  const Memory& m = *b.value()->realized;
  await_writes(m);
  return m.data;
}

}  // namespace loom
