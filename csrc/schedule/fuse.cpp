#include "schedule/fuse.h"

#include <algorithm>
#include <atomic>
#include "core/graph.h"
#include "core/node_map.h"
#include "schedule/realize.h"

namespace loom {

namespace {

// Bounds the ops of one fused expression (reindexes not counted); past it producers are
// realized instead.
constexpr int kMaxFusedNodes = 256;

// Entries remember their node by serial (holding it would add to the reference counts
// that NOTE [Live state] reads): fusion realizes producers, which drops their
// expressions, and a node made later at a freed address must not find a dead node's
// answer. That made the schedule depend on the allocator: now and then a reduction was
// stored on its own.
using ReductionMemo = NodeMap<std::pair<uint64_t, bool>>;

bool broadcasts(const IndexMap& m, const Shape& shape) {
  for (size_t j = 0; j < shape.size(); ++j)
    if (m.dim_of[j] < 0 && shape[j] > 1) return true;
  return false;
}

// True when the value computes a reduction or scan below it (before realized or stored
// values). With `per_element`, only reductions computed for each of its elements count
// (a pooling, a cumsum): those read through a broadcast (a normalization's statistics)
// do not, since fusion computes them once (materialize_broadcast_reduce). Each mode needs
// a memo of its own.
bool has_reduction(const Node* n, ReductionMemo& memo, bool per_element = false) {
  if (per_element && n->op == Op::Reindex && broadcasts(std::get<IndexMap>(n->arg), n->shape))
    return false;
  if (const auto* e = memo.find(n); e && e->first == n->serial) return e->second;
  bool r = !n->stored && (n->op == Op::Reduce || n->op == Op::Scan);
  if (!r && n->op != Op::Load && !n->stored)
    for (size_t i = n->op == Op::Gather ? 1 : 0; i < n->src.size(); ++i)
      if (has_reduction(n->src[i].get(), memo, per_element)) {
        r = true;
        break;
      }
  memo[n] = {n->serial, r};
  return r;
}

// Scratch storage is an Empty of a negative id (a buffer's own are counted up from 0).
int64_t scratch_id() {
  static std::atomic<int64_t> next{0};
  return -1 - next++;
}

// Reads each element once but for dims of stride 0.
bool broadcasts_only(const View& v) {
  View rest;
  rest.offset = v.offset;
  for (size_t k = 0; k < v.sizes.size(); ++k)
    if (v.strides[k] != 0 || v.sizes[k] <= 1) {
      rest.sizes.push_back(v.sizes[k]);
      rest.strides.push_back(v.strides[k]);
    }
  return is_non_overlapping(rest);
}

bool reads_each_once(const View& v) {
  for (size_t k = 0; k < v.sizes.size(); ++k)
    if (v.sizes[k] > 1 && v.strides[k] == 0) return false;
  return is_non_overlapping(v);
}

// A value the program holds that reads this many arrays whole (following the producers
// fusion would inline) is stored rather than recomputed by each reader (NOTE [Live state]).
constexpr int kWideReads = 4;

// The arrays a kernel computing `n` reads whole: loads that read each element once and
// gathers, through pending elementwise producers that would be inlined; counts up to
// `limit`.
int wide_reads(const Node* n, NodeSet& seen, ReductionMemo& memo,
               int limit) {
  if (!seen.insert(n)) return 0;
  // Read through a broadcast (a normalization's statistics): not whole arrays.
  if (n->op == Op::Reindex && broadcasts(std::get<IndexMap>(n->arg), n->shape)) return 0;
  if (n->stored) return 1;
  if (n->op == Op::Load) {
    const Node* flat = n->src[0].get();
    const bool inlines = !flat->realized && flat->op == Op::Store && flat->dtype == n->dtype &&
                         (flat->owner.expired() || flat->src[0]->op == Op::Empty) &&
                         is_dense_cover(flat->view(), flat->shape[0] / itemsize(flat->dtype)) &&
                         !has_reduction(flat->src[1].get(), memo);
    if (inlines) return wide_reads(flat->src[1].get(), seen, memo, limit);
    return reads_each_once(n->view()) ? 1 : 0;
  }
  int count = n->op == Op::Gather ? 1 : 0;
  for (size_t i = n->op == Op::Gather ? 1 : 0; i < n->src.size() && count < limit; ++i)
    count += wide_reads(n->src[i].get(), seen, memo, limit - count);
  return count;
}

// NOTE [Live state]: a pending value that will be read again is stored rather than
// inlined into its reader (in place when nothing else reads the old contents), when
// recomputing it in each reader costs more than a store:
// * a write onto existing contents (an in-place op, `copy_`, an optimizer update) of a
//   buffer that is still alive: the buffer's later writes build on it. Inlined, it would
//   stay pending, so each later value (the next optimizer step over the parameter read by
//   this step's forward) would carry the whole history in its expression. A write that a
//   later whole write replaced is not the buffer's state any more (NOTE [Superseded
//   writes] in core/graph.cpp);
// * a value that reads kWideReads arrays or more (a residual stream: embeddings plus each
//   block's output and bias), held by the program or read outside this kernel: each
//   reader (a layer norm's passes, the next residual add, the backward) would read them
//   all again;
// * a result computed by reductions (pooling, softmax, a normalization's statistics) that
//   the program still holds, or whose load some node outside this kernel also reads: each
//   reader would compute the reductions again. A training step realized at its end reads
//   a pooled activation in the forward and again in the backward, long after Python
//   dropped it. (Two reads through different views are not seen; reads inside one kernel
//   share one computation and do not count.) For a value not held by the program, only
//   reductions per element count (has_reduction, per_element): statistics read through a
//   broadcast are computed once anyway (Node::stored), so recomputing the value on them
//   in each reader is elementwise.
// * a value computing a node whose cohort has members still pending (has_pending_cohort):
//   stored, they are computed in its kernel (NOTE [Cohorts]).
// A fresh elementwise result inlines as usual, and so does a write into a buffer that has
// died (`y = bn(x); y.relu_()` in a forward whose `y` is gone): fusion through
// intermediates is what laziness is for.
struct Fuser {
  // Keys are held alive: nodes made during fusion may otherwise die and a new node reuse
  // the address, hitting a stale entry.
  NodeMap<std::pair<NodeRef, NodeRef>> memo;
  ReductionMemo reduction_memo, per_element_memo;
  int budget = kMaxFusedNodes;
  const Node* keep = nullptr;
  NodeSet siblings;  // pending stores inlined although their buffers live on
  bool inline_broadcasts = false, inlined = false;
  // The output size of the innermost reduction enclosing the node being visited, or -1
  // (NOTE [Nested reductions]).
  int64_t reduce_numel = -1;
  // References to each node from inside the expressions this fusion handles (the value
  // and every producer inlined into it), and from their holders: a load referenced more
  // often has readers elsewhere. Entries are keyed by address but remember their node by
  // serial (a count must not add a reference): one whose node died is stale, since a new
  // node may have the same address.
  struct RefCount {
    uint64_t serial = 0;
    long refs = 0;
    bool walked = false;
  };
  NodeMap<RefCount> internal_refs;
  // Nodes of the expressions fused here that pending values elsewhere also read: more
  // references than those counted inside when their expression was first walked (before
  // fusion added references of its own). Held by those expressions while fusion runs.
  NodeSet read_outside;
  // The node of the graph as it was that each rewritten node stands for.
  NodeMap<NodeRef> original;

  // The fusion that realizes the storage this one computes (scratch storage for a
  // broadcast reduction, a producer it does not inline), if any.
  Fuser* outer = nullptr;

  // A node that an enclosing fusion made or kept: its references there are not readers,
  // and that fusion has looked for shared parts below it already.
  bool rewritten_outside(const Node* n) const {
    for (const Fuser* f = outer; f; f = f->outer)
      if (f->original.count(n)) return true;
    return false;
  }

  RefCount& refs_of(const Node* n) {
    RefCount& r = internal_refs[n];
    if (r.serial != n->serial) r = RefCount{n->serial};
    return r;
  }

  void count_refs(const NodeRef& root, long holders) {
    count_refs(std::vector<const Node*>{root.get()}, holders);
  }

  // The same over several roots at once (held by the caller): a node they share is read
  // outside only if its holders outnumber the references from all of them.
  void count_refs(const std::vector<const Node*>& roots, long holders) {
    std::vector<const Node*> stack, walked;
    for (const Node* root : roots) {
      refs_of(root).refs += holders;
      stack.push_back(root);
    }
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      RefCount& r = refs_of(n);
      if (r.walked || n->op == Op::Load) continue;
      r.walked = true;
      if (!memo.count(n)) walked.push_back(n);
      for (size_t i = n->op == Op::Gather ? 1 : 0; i < n->src.size(); ++i) {
        refs_of(n->src[i].get()).refs++;
        stack.push_back(n->src[i].get());
      }
    }
    // The walked nodes are alive: the caller holds the root they were reached from.
    for (const Node* n : walked) {
      if (rewritten_outside(n)) continue;
      if (n->weak_from_this().use_count() > refs_of(n).refs) read_outside.insert(n);
    }
  }

  bool stores_rather_than_inlines(const NodeRef& load, const Node* flat, const NodeRef& value) {
    const bool alive = !flat->owner.expired();
    if (alive && flat->src[0]->op != Op::Empty) return true;
    if (alive && has_reduction(value.get(), reduction_memo)) return true;
    if (has_pending_cohort(value.get())) return true;
    if (!alive && load.use_count() <= refs_of(load.get()).refs) return false;
    if (!alive && has_reduction(value.get(), per_element_memo, true)) return true;
    NodeSet seen;
    return wide_reads(value.get(), seen, reduction_memo, kWideReads) >= kWideReads;
  }

  // Whether `value` computes, once per element, a node whose cohort has members still
  // pending (NOTE [Cohorts]): max pooling's values, whose indices the backward reads.
  // Inlined into a reader that reduces them (the average pool after a CNN's last block),
  // the windows would run in that reader's kernel and again in a kernel of the indices'
  // own; stored, the values and indices are computed together.
  static bool has_pending_cohort(const Node* value) {
    std::vector<const Node*> stack{value};
    NodeSet seen;
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (!seen.insert(n) || n->stored) continue;
      for (const auto& w : n->cohort)
        if (NodeRef member = std::const_pointer_cast<Node>(w.lock()))
          if (member.get() != n && !member->stored && member->shape == n->shape) return true;
      const OpKind kind = op_kind(n->op);
      if (kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Ternary ||
          (n->op == Op::Reindex && unit_dims_only(*n)))
        for (const NodeRef& s : n->src) stack.push_back(s.get());
    }
    return false;
  }

  // The producer expression that a Load of `flat` through `load` can be replaced with.
  NodeRef inline_producer(const NodeRef& load) {
    const NodeRef& flat = load->src[0];
    if (flat->op != Op::Store || budget <= 0) return nullptr;
    const View& sv = flat->view();
    if (flat->dtype != load->dtype) return nullptr;
    if (!is_dense_cover(sv, flat->shape[0] / itemsize(flat->dtype))) return nullptr;
    const NodeRef& value = flat->src[1];
    if (value->op == Op::Scan) return nullptr;
    if (!siblings.count(flat.get()) && stores_rather_than_inlines(load, flat.get(), value))
      return nullptr;
    // A value with reductions inside is inlined only where each element is read once:
    // otherwise its reductions would run again for every repeated read. A broadcast read
    // may be inlined when the caller checks where the reductions land (see fuse.h).
    // NOTE [Nested reductions]: nor is a value computed by a reduction per element inlined
    // under a reduction with fewer outputs than the elements read: the inner reduction
    // would run inside the outer one's reduced loop, on as many threads as the outer one
    // has outputs (one for a norm) and with a loop nest clang does not vectorize. Stored
    // first, it runs across threads and vectorized, and the outer reduction reads it.
    // `x.sum(0).pow(2).sum()` over 1024x512: 1.43 ms in one kernel, 0.08 ms in two.
    // clip_grad_norm_ over a GPT's gradients met it when the host ran ahead of the
    // kernels: the next zero_grad() superseded each bias gradient's sum, which then
    // inlined into its norm (2.6 ms of scalar kernels a step). Statistics read through a
    // broadcast are per row, not per element, and still inline (a softmax's row sum).
    if (has_reduction(value.get(), reduction_memo)) {
      if (reads_each_once(load->view())) {
        if (reduce_numel >= 0 && numel(load->shape) > reduce_numel &&
            has_reduction(value.get(), per_element_memo, true))
          return nullptr;
      } else {
        if (!inline_broadcasts || !broadcasts_only(load->view())) return nullptr;
        inlined = true;
      }
    }
    auto map = compose_through(sv, load->view());
    if (!map) return nullptr;
    // The producer's own expression reads what its copy here reads: not a reader elsewhere.
    count_refs(value, 1);
    return reindex(value, load->shape, std::move(*map));
  }

  // A reduction read through a broadcast would be recomputed for every element it is
  // broadcast to: compute it once into storage of its own and read that instead. The
  // storage stays with the value (Node::stored): every later kernel reads it from there,
  // and a value built on it no longer counts as computing reductions. A batch norm's mean
  // and variance are computed once, and its output, elementwise on them, fuses into
  // each reader.
  NodeRef materialize_broadcast_reduce(const NodeRef& src, const NodeRef& reindex_node) {
    if (src->op == Op::Load || !has_reduction(src.get(), reduction_memo) ||
        !broadcasts(std::get<IndexMap>(reindex_node->arg), reindex_node->shape))
      return src;
    if (inline_broadcasts) {
      inlined = true;
      return src;
    }
    NodeMap<NodeRef> done;
    NodeRef value = with_shared_parts_stored(src, 0, done);
    src->stored = store_scratch(value);
    value->stored = src->stored;
    // The value as the graph holds it (before this fusion rewrote its sources) is the same.
    reindex_node->src[0]->stored = src->stored;
    return src->stored;
  }

  // Computes `value` into scratch storage of its own; returns the load of it.
  static NodeRef store_scratch(const NodeRef& value) {
    int64_t nbytes = numel(value->shape) * itemsize(value->dtype);
    NodeRef empty = make_node(Op::Empty, DType::UInt8, {nbytes}, {}, scratch_id());
    View v = View::contiguous(value->shape);
    NodeRef flat = make_node(Op::Store, value->dtype, {nbytes}, {empty, value}, v);
    realize_value(flat);
    return make_node(Op::Load, value->dtype, value->shape, {flat}, v);
  }

  // NOTE [Shared statistics]: below a value stored for a broadcast, a part computed by
  // reductions that pending values elsewhere also read is stored first, on its own, and
  // the value computed from it. Batch norm's variance feeds the inverse deviation that the
  // output reads and the running variance; the sums in its backward's input gradient are
  // the weight and bias gradients. Stored only as the inverse deviation (or the means),
  // they were computed again, each by a pass over the activations, when the optimizer
  // read the gradients. The part's node as the graph holds it keeps the storage
  // (Node::stored), so those later kernels read it.
  NodeRef with_shared_parts_stored(const NodeRef& n, int64_t top_numel,
                                   NodeMap<NodeRef>& done) {
    if (n->stored) return n->stored;
    // Held, not iterated: the kernels below may visit more nodes (cohorts) into `original`.
    const NodeRef* found = original.find(n.get());
    NodeRef orig = found ? *found : nullptr;
    // Stored since this fusion rewrote it (by a cohort's kernel).
    if (orig && orig->stored) return orig->stored;
    if (n->op == Op::Load || n->src.empty() || !has_reduction(n.get(), reduction_memo)) return n;
    if (const NodeRef* d = done.find(n.get())) return *d;
    NodeRef out;
    // Only statistics: parts no larger than the value (not the centered activations that
    // the output and the variance both read).
    if (top_numel > 0 && numel(n->shape) <= top_numel && orig && read_outside.count(orig.get())) {
      out = store_scratch(n);
      n->stored = out;
      orig->stored = out;
    } else {
      Sources src = n->src;
      bool changed = false;
      for (size_t i = n->op == Op::Gather ? 1 : 0; i < src.size(); ++i) {
        NodeRef s = with_shared_parts_stored(src[i], top_numel ? top_numel : numel(n->shape), done);
        changed |= s != src[i];
        src[i] = std::move(s);
      }
      out = changed ? make_node(n->op, n->dtype, n->shape, std::move(src), n->arg) : n;
      // It stands for n in n's cohort, as in visit (max pooling's values over stored
      // batch norm statistics, whose indices are still pending).
      if (out != n && !n->cohort.empty() && out->cohort.empty()) out->cohort = n->cohort;
    }
    done[n.get()] = out;
    return out;
  }

  NodeRef visit(const NodeRef& n) {
    if (const auto* e = memo.find(n.get())) {
      // A kernel run since may have stored the value: a cohort member that an inner
      // fusion met through this one (cohort_of) before its kernel stored it.
      const NodeRef& out = e->second;
      return n->stored ? n->stored : out->stored ? out->stored : out;
    }
    NodeRef out;
    if (n->stored) {
      out = n->stored;
    } else if (n->op == Op::Load) {
      const NodeRef& flat = n->src[0];
      if (flat->realized || flat.get() == keep) {
        out = n;
      } else if (NodeRef inner = inline_producer(n)) {
        count_refs(inner, 1);
        out = visit(inner);
      } else {
        realize_value(flat);
        out = n;
      }
    } else if (n->op == Op::Gather) {
      // Data-dependent addresses read realized storage; the index expression fuses.
      realize_value(n->src[0]);
      NodeRef index = visit(n->src[1]);
      out = index == n->src[1]
                ? n
                : make_node(Op::Gather, n->dtype, n->shape, {n->src[0], index}, n->arg);
    } else if (n->src.empty()) {
      out = n;
    } else {
      // A reindex is index arithmetic, not code: each inlined producer comes wrapped in
      // one, and counting those halved the budget (a sum of 8 chains of 8 multiply-adds,
      // 135 ops, split into two kernels).
      if (n->op != Op::Reindex) --budget;
      // The sources as visited, built only once one of them changes.
      Sources src;
      const int64_t enclosing = reduce_numel;
      if (n->op == Op::Reduce) reduce_numel = numel(n->shape);
      for (size_t i = 0; i < n->src.size(); ++i) {
        NodeRef v = visit(n->src[i]);
        if (src.empty()) {
          if (v == n->src[i]) continue;
          src.reserve(n->src.size());
          src.assign(n->src.begin(), n->src.begin() + std::ptrdiff_t(i));
        }
        src.push_back(std::move(v));
      }
      reduce_numel = enclosing;
      // A split reduction's partials (NOTE [Split reductions] in core/graph.h) are stored
      // by a kernel of their own, which runs across threads.
      if (n->op == Op::Reduce && numel(n->shape) <= kSplitColumnsMax) {
        const NodeRef& part = src.empty() ? n->src[0] : src[0];
        if (part->op == Op::Reduce && numel(part->shape) == kSplitReduce * numel(n->shape) &&
            numel(part->src[0]->shape) >= kSplitReduceMin) {
          NodeRef stored = store_scratch(part);
          part->stored = n->src[0]->stored = stored;
          if (src.empty()) src.assign(n->src.begin(), n->src.end());
          src[0] = stored;
        }
      }
      const bool changed = !src.empty();
      if (n->op == Op::Reindex) {
        NodeRef inner = materialize_broadcast_reduce(changed ? src[0] : n->src[0], n);
        out = inner == n->src[0] ? n : reindex(inner, n->shape, std::get<IndexMap>(n->arg));
      } else if (!changed) {
        out = n;
      } else {
        out = make_node(n->op, n->dtype, n->shape, std::move(src), n->arg);
      }
      // The rewritten value stands for the original in its cohort (NOTE [Cohorts]).
      if (!n->cohort.empty() && out != n && out->cohort.empty()) out->cohort = n->cohort;
      // The rewritten value may be one that an earlier kernel stored.
      if (out->stored) out = out->stored;
    }
    memo[n.get()] = {n, out};
    original.emplace(out.get(), n);
    return out;
  }

  // NOTE [Cohorts]: some ops make values that are read later, computed over the same
  // loops from the same inputs: max pooling's values now, its indices in the backward;
  // the two sums of a batch norm's backward, one read by the input gradient, both by the
  // parameter gradients. Computed as each is needed, every one is a pass over the
  // activations (the indices recomputing the forward's windows). An op marks such values
  // a cohort (make_cohort). A kernel storing a value computes each node below it once per
  // element when only elementwise ops (and a reindex adding or dropping dims of size 1)
  // lie between; the pending members of such a node's cohort are stored beside the
  // value, into scratch storage of their own (Node::stored), and the renderer runs their
  // reductions in one loop (NOTE [Joint reductions]). A member that died with its last
  // reader is not computed.
  struct Found {
    const Node* node;
    const IndexMap* map;
  };
  // Nodes computed once per element of the value: it, the elementwise ops below it, and
  // below a reindex of dims of size 1 (then their members are reindexed the same way).
  static std::vector<Found> per_element_nodes(const NodeRef& r) {
    std::vector<Found> found, stack{{r.get(), nullptr}};
    NodeSet seen;
    while (!stack.empty()) {
      Found f = stack.back();
      stack.pop_back();
      const Node* n = f.node;
      if (!seen.insert(n)) continue;
      if (!n->cohort.empty()) found.push_back(f);
      const OpKind kind = op_kind(n->op);
      if (kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Ternary) {
        for (const NodeRef& s : n->src) stack.push_back({s.get(), f.map});
      } else if (n->op == Op::Reindex && !f.map && unit_dims_only(*n)) {
        stack.push_back({n->src[0].get(), &std::get<IndexMap>(n->arg)});
      }
    }
    return found;
  }

  // The pending members of the cohorts of nodes computed once per element of `r`, each with
  // the reindex between it and `r` (or null).
  static std::vector<std::pair<NodeRef, const IndexMap*>> pending_members(const NodeRef& r) {
    std::vector<std::pair<NodeRef, const IndexMap*>> members;
    for (const Found& f : per_element_nodes(r))
      for (const auto& w : f.node->cohort) {
        NodeRef member = std::const_pointer_cast<Node>(w.lock());
        if (member && !member->stored && member->shape == f.node->shape &&
            std::none_of(members.begin(), members.end(),
                         [&](const auto& m) { return m.first == member; }))
          members.emplace_back(std::move(member), f.map);
      }
    return members;
  }

  // Members whose references fuse() counted with the value's.
  NodeSet counted_members;
  // Whether fuse stored the value's shared parts first, and its nodes as rewritten then
  // (keyed by address: the members' fused values that added keys are held in `held`, so
  // that no key dies and a new node takes its address while fusion runs).
  bool shared_stored = false;
  NodeMap<NodeRef> shared_done;
  std::vector<NodeRef> held;

  void cohort_of(const NodeRef& r, std::vector<CohortValue>& out) {
    for (const auto& [member, map] : pending_members(r)) {
      if (member->stored) continue;  // stored by a kernel that an earlier member's fusion ran
      // An enclosing fusion (which stores the value this one computes) that has met the
      // member decides what to inline into it: it counted the member's readers in its
      // expression. One that has not (a library call reading the value alone) would
      // rewrite the member by its own rules, below the parts this fusion stored first;
      // it finds the member stored if it meets it later.
      NodeRef start = outer && outer->memo.find(member.get()) ? outer->visit(member) : member;
      if (start != member || !counted_members.count(member.get())) count_refs(start, 1);
      NodeRef fused = visit(start);  // the caller checks inlined broadcasts of each value
      // The parts stored below the value are read stored by the member too (batch norm's
      // statistics under max pooling's windows, whose indices would recompute them).
      if (shared_stored) {
        held.push_back(fused);
        fused = with_shared_parts_stored(fused, 0, shared_done);
      }
      if (fused->op == Op::Load || !reads_realized(fused)) continue;
      NodeRef value = map ? reindex(fused, r->shape, *map) : fused;
      out.push_back({member, fused, value});
    }
  }

  // A reindex that adds or drops dims of size 1 only: the contiguous layouts of its value
  // and its source are the same bytes.
  static bool unit_dims_only(const Node& n) {
    const IndexMap& m = std::get<IndexMap>(n.arg);
    const Shape& in = n.src[0]->shape;
    int next = 0;
    for (size_t j = 0; j < n.shape.size(); ++j) {
      if (m.dim_of[j] < 0) {
        if (n.shape[j] != 1) return false;
        continue;
      }
      if (m.dim_of[j] < next || m.mult[j] != 1 || m.offs[m.dim_of[j]] != 0) return false;
      for (; next < m.dim_of[j]; ++next)
        if (in[next] != 1) return false;
      ++next;
    }
    for (; next < int(in.size()); ++next)
      if (in[next] != 1) return false;
    return true;
  }

  static bool reads_realized(const NodeRef& root) {
    NodeSet seen;
    std::vector<const Node*> stack{root.get()};
    while (!stack.empty()) {
      const Node* n = stack.back();
      stack.pop_back();
      if (!seen.insert(n)) continue;
      if ((n->op == Op::Load || n->op == Op::Gather) && !n->src[0]->realized) return false;
      for (size_t i = n->op == Op::Load || n->op == Op::Gather ? 1 : 0; i < n->src.size(); ++i)
        stack.push_back(n->src[i].get());
    }
    return true;
  }
};

}  // namespace

// Whether `n` is computed by reductions of its own size (statistics, not a value that reads
// statistics through a broadcast).
bool is_statistic(const Node* n, int64_t size, NodeSet& seen) {
  if (n->op == Op::Reduce) return numel(n->shape) == size;
  if (n->op == Op::Load || n->stored || !seen.insert(n)) return false;
  for (size_t i = n->op == Op::Gather ? 1 : 0; i < n->src.size(); ++i)
    if (is_statistic(n->src[i].get(), size, seen)) return true;
  return false;
}

bool is_scratch(const Node* flat) {
  const Node* base = flat->op == Op::Store ? flat->src[0].get() : nullptr;
  return base && base->op == Op::Empty && base->int_arg() < 0;
}

bool computes_reduction(const NodeRef& value) {
  ReductionMemo memo;
  return has_reduction(value.get(), memo);
}

void set_cohort_stored(const CohortValue& c, const View& view, std::shared_ptr<Memory> mem) {
  const NodeRef& v = c.value;
  int64_t nbytes = numel(v->shape) * itemsize(v->dtype);
  NodeRef empty = make_node(Op::Empty, DType::UInt8, {nbytes}, {}, scratch_id());
  NodeRef flat = make_node(Op::Store, v->dtype, {nbytes}, {empty, v}, view);
  set_realized(flat, std::move(mem));
  const Shape& shape = c.member->shape;
  c.member->stored = make_node(Op::Load, v->dtype, shape, {flat},
                               shape == view.sizes ? view : View::contiguous(shape));
  c.fused->stored = c.member->stored;
}

NodeRef fuse(const NodeRef& value, const Node* keep, bool inline_broadcasts, bool* inlined,
             bool store_shared_parts, std::vector<CohortValue>* cohort,
             std::vector<SiblingStore>* siblings) {
  thread_local Fuser* innermost = nullptr;
  Fuser f;
  f.outer = innermost;
  innermost = &f;
  struct Restore {
    Fuser* prev;
    ~Restore() { innermost = prev; }
  } restore{f.outer};
  f.keep = keep;
  f.inline_broadcasts = inline_broadcasts;
  if (siblings)
    for (const SiblingStore& s : *siblings) f.siblings.insert(s.flat.get());
  // The node being realized holds the value. The cohort members stored beside it are
  // computed by its kernel: what they read there is not read elsewhere (max pooling's
  // indices read the window maximum that its values are), which matters where the
  // value's shared parts are stored first (with_shared_parts_stored).
  const auto members = cohort && store_shared_parts
                           ? Fuser::pending_members(value)
                           : std::vector<std::pair<NodeRef, const IndexMap*>>{};
  std::vector<const Node*> roots{value.get()};
  for (const auto& m : members) {
    f.counted_members.insert(m.first.get());
    roots.push_back(m.first.get());
  }
  f.count_refs(roots, 1);
  NodeRef r = f.visit(value);
  if (siblings)  // the memo gives each the node inlined into the value
    for (SiblingStore& s : *siblings)
      if (!s.flat->realized) s.value = f.visit(s.flat->src[1]);
  NodeSet seen;
  if (store_shared_parts && is_statistic(r.get(), numel(r->shape), seen)) {
    f.shared_stored = true;
    r = f.with_shared_parts_stored(r, 0, f.shared_done);
  }
  if (cohort) f.cohort_of(r, *cohort);
  if (inlined) *inlined = f.inlined;
  return r;
}

}  // namespace loom
