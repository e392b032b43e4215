#include "schedule/realize.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "codegen/kernel.h"
#include "core/metrics.h"
#include "schedule/fuse.h"

namespace loom {

namespace {

// NOTE [Reinplacing]: a store may compute into its base's memory only when nothing but
// this kernel will ever read the base value again. Every reference to the base must come
// from the kernel's own expression DAG (or the store node), and every node of that DAG
// that reaches the base must itself be referenced only from inside the DAG: otherwise
// some lazy reader outside (another buffer's pending value, a tensor recorded before the
// write) would later read clobbered memory. Loads of the base must use the store's view,
// so each element is read before it is overwritten at the same index.
bool can_reuse_base(const Node* store, const Node* base, const Node* expr) {
  std::unordered_map<const Node*, long> internal_refs;
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> order, stack{expr};
  internal_refs[expr] = 1;  // from the store node
  internal_refs[base] = 1;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    order.push_back(n);
    if (n->op == Op::Load && n->src[0].get() == base && !(n->view() == store->view()))
      return false;
    if (n->op == Op::Load) {
      internal_refs[n->src[0].get()]++;
      continue;  // below a load lies storage, not this kernel's DAG
    }
    for (const auto& s : n->src) {
      internal_refs[s.get()]++;
      stack.push_back(s.get());
    }
  }
  if (base->weak_from_this().use_count() != internal_refs[base]) return false;
  // A DAG node referenced from outside makes everything below it externally reachable.
  std::unordered_set<const Node*> external;
  for (const Node* n : order) {
    bool ext = n->weak_from_this().use_count() != internal_refs[n];
    if (ext) external.insert(n);
  }
  if (external.empty()) return true;
  // Propagate reachability down from external nodes; fail if it reaches a load of base.
  std::vector<const Node*> work(external.begin(), external.end());
  std::unordered_set<const Node*> reached(external.begin(), external.end());
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (n->op == Op::Load) {
      if (n->src[0].get() == base) return false;
      continue;
    }
    for (const auto& s : n->src)
      if (reached.insert(s.get()).second) work.push_back(s.get());
  }
  return true;
}

void realize_store(const NodeRef& v) {
  // Fuse first: inlining or realizing producers may take other buffers' values.
  NodeRef expr = fuse(v->src[1]);
  v->src[1] = expr;
  expr.reset();
  const Node* base = v->src[0].get();
  bool covers = is_dense_cover(v->view(), v->shape[0] / itemsize(v->dtype));
  std::shared_ptr<Memory> mem;
  if (base->realized && can_reuse_base(v.get(), base, v->src[1].get())) {
    mem = base->realized;
  } else if (covers || (base->op == Op::Empty && !base->realized)) {
    mem = allocate_memory(size_t(v->shape[0]));  // every byte that matters is stored
  } else {
    realize_value(v->src[0]);
    if (can_reuse_base(v.get(), base, v->src[1].get())) {
      mem = base->realized;
    } else {
      mem = allocate_memory(size_t(v->shape[0]));
      std::memcpy(mem->data, base->realized->data, mem->nbytes);
    }
  }
  run_store_kernel(v->view(), v->dtype, v->src[1], mem);
  set_realized(v, std::move(mem));
}

}  // namespace

void realize_value(const NodeRef& flat) {
  if (flat->realized) return;
  metrics().realizations++;
  switch (flat->op) {
    case Op::Empty:
      set_realized(flat, allocate_memory(size_t(flat->shape[0])));
      return;
    case Op::Store:
      realize_store(flat);
      return;
    default:
      throw std::logic_error(std::string("loom: cannot realize ") + op_name(flat->op));
  }
}

void realize(Buffer& b) {
  std::lock_guard<std::recursive_mutex> g(engine_mutex());
  realize_value(b.value);
}

void realize_all() {
  std::lock_guard<std::recursive_mutex> g(engine_mutex());
  for (Buffer* b : live_buffers())
    if (!b->value->realized && b->value->op != Op::Empty) realize_value(b->value);
}

const void* realized_data(Buffer& b) {
  std::lock_guard<std::recursive_mutex> g(engine_mutex());
  realize_value(b.value);
  return b.value->realized->data;
}

}  // namespace loom
