#include "schedule/reuse.h"

#include <algorithm>

#include "codegen/kernel.h"
#include "core/metrics.h"

namespace loom {

namespace {

bool is_identity(const IndexMap& m, const Shape& shape) {
  if (m.offs.size() != shape.size()) return false;
  for (size_t j = 0; j < shape.size(); ++j)
    if (m.offs[j] != 0 || m.dim_of[j] != int(j) || (m.mult[j] != 1 && shape[j] != 1)) return false;
  return true;
}

}  // namespace

bool disjoint(const View& a, const View& b) {
  auto span = [](const View& v, int64_t& lo, int64_t& hi) {
    lo = hi = v.offset;
    for (size_t d = 0; d < v.sizes.size(); ++d) {
      if (v.sizes[d] == 0) return false;
      hi += (v.sizes[d] - 1) * v.strides[d];
    }
    return true;
  };
  int64_t alo, ahi, blo, bhi;
  if (!span(a, alo, ahi) || !span(b, blo, bhi)) return true;
  return ahi < blo || bhi < alo;
}

// NOTE [Reinplacing]: a write may compute into its base's memory only when nothing but
// this kernel will ever read the base value again. Every reference to the base must come
// from the kernel's own expression DAGs (or the write node), and every node of those DAGs
// that reaches the base must itself be referenced only from inside them: otherwise some
// lazy reader outside (another buffer's pending value, a tensor recorded before the
// write) would later read clobbered memory. A store's loads of the base must use the
// store's view, so each element is read before it is overwritten at the same index, or
// read elements the store never writes; a scatter writes anywhere, so it may not read the
// base at all.
// `base` is the write's own base, which the write node holds; a donor (NOTE [Donated
// memory]) is not, and the write's reference does not count for it. Between the write and
// its base may lie superseded whole writes (`chain`, NOTE [Superseded bases]), each held
// by the write above it alone: their values count as the kernel's own expressions.
// `*loaded` tells whether those expressions load the base at all.
bool can_reuse_base(const Node* write, const Node* base, const std::vector<const Node*>& exprs,
                    bool held_by_write, const std::vector<const Node*>& chain, bool* loaded) {
  // Leaves (constants: a setitem loop's stores, checked one by one) read nothing, so only
  // the base's other readers matter.
  if (std::all_of(exprs.begin(), exprs.end(), [](const Node* e) { return e->src.empty(); }))
    return base->weak_from_this().use_count() == (held_by_write ? 1 : 0);
  const View* same_view = write->op == Op::Store ? &write->view() : nullptr;
  NodeMap<long> internal_refs;
  NodeSet seen;
  std::vector<const Node*> order, stack;
  for (const Node* e : exprs) {
    internal_refs[e]++;  // from the write node
    stack.push_back(e);
  }
  for (const Node* c : chain) {
    internal_refs[c]++;  // from the write above it
    internal_refs[c->src[1].get()]++;
    stack.push_back(c->src[1].get());
  }
  internal_refs[base] = held_by_write ? 1 : 0;
  auto reads_base = [&](const Node* n) {
    if (n->src[0].get() != base) return false;
    if (n->op == Op::Gather || !same_view) return true;
    // Views count elements of their own dtype: across sizes they cannot be compared.
    if (itemsize(n->dtype) != itemsize(write->dtype)) return true;
    return !(n->view() == *same_view) && !disjoint(n->view(), *same_view);
  };
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n)) continue;
    order.push_back(n);
    if (n->op == Op::Load || n->op == Op::Gather) {
      if (reads_base(n)) return false;
      if (loaded && n->src[0].get() == base) *loaded = true;
      internal_refs[n->src[0].get()]++;  // below a load lies storage, not this kernel's DAG
      if (n->op == Op::Load) continue;
      internal_refs[n->src[1].get()]++;
      stack.push_back(n->src[1].get());
      continue;
    }
    for (const auto& s : n->src) {
      internal_refs[s.get()]++;
      stack.push_back(s.get());
    }
  }
  // A load at the store's own view still reads other elements under a reindex of the
  // expression above it (`p.add_((p * 2).flip(0))`): the reindex moves the whole
  // expression's index, and a fused producer comes wrapped in one.
  NodeSet clean;  // nodes with no load of the base below them
  auto reads_base_below = [&](const Node* top) {
    std::vector<const Node*> work{top};
    while (!work.empty()) {
      const Node* n = work.back();
      work.pop_back();
      if (clean.count(n)) continue;
      if (n->op == Op::Load || n->op == Op::Gather) {
        if (n->src[0].get() == base) return true;
        if (n->op == Op::Load) continue;
      }
      clean.insert(n);
      for (size_t i = n->op == Op::Gather ? 1 : 0; i < n->src.size(); ++i)
        work.push_back(n->src[i].get());
    }
    return false;
  };
  for (const Node* n : order)
    if (n->op == Op::Reindex && !is_identity(std::get<IndexMap>(n->arg), n->shape) &&
        reads_base_below(n->src[0].get()))
      return false;
  if (base->weak_from_this().use_count() != internal_refs[base]) return false;
  // A DAG node referenced from outside makes everything below it externally reachable.
  std::vector<const Node*> work;
  for (const Node* n : order)
    if (n->weak_from_this().use_count() != internal_refs[n]) work.push_back(n);
  NodeSet reached;
  for (const Node* n : work) reached.insert(n);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    size_t first = 0;
    if (n->op == Op::Load || n->op == Op::Gather) {
      if (n->src[0].get() == base) return false;
      first = 1;
    }
    for (size_t i = first; i < n->src.size(); ++i)
      if (reached.insert(n->src[i].get())) work.push_back(n->src[i].get());
  }
  return true;
}

// NOTE [Strict kernels]: a kernel over ops with a strict path (sin's large arguments,
// fmod's long quotients, checks) reruns only when it reads no memory it writes (NOTE
// [Deferred checks]); one that cannot rerun takes the rare path in every lane. A store
// covering its buffer keeps a fresh block then: a realized float64 product, then its
// remainder, the product dying, 20.9 -> 1.2 ms for both (float32 sin: 1.07 -> 0.80); and
// one in place over 1M elements: float32 `x.remainder_(3.0)` 1.79 -> 0.49 ms (eager 1.46),
// `x.sin_()` 0.75 -> 0.44 (0.84), float64 `x.cos_()` 2.33 -> 0.91 (1.98). One block more
// is alive meanwhile, as for the functional form. A store over part of its buffer still
// writes in place, where the other elements are.
bool has_strict_ops(const std::vector<const Node*>& exprs) {
  bool strict = false;
  for (const Node* e : exprs)
    walk_within(e, kMaxStrictWalk, [&](const Node* n, std::vector<const Node*>& more) {
      strict |= has_strict_path(n->op, n->dtype);
      if (n->op != Op::Load)
        for (const auto& src : n->src) more.push_back(src.get());
      return !strict;
    });
  return strict;
}

namespace {

// NOTE [Donated memory]: a store that covers a fresh buffer computes into the memory of a
// value it reads once nothing else will ever read that value: a temporary that dies with
// this kernel (`relu(x @ w + b)`'s product, read by the fused epilogue alone). The rules
// are reinplacing's (NOTE [Reinplacing]), with the donor in the base's place: every load
// of it reads the elements the store writes, at their index, and every reference to it
// comes from the kernel's own expressions. Its memory must be its own (a reinplaced write
// shares its base's) and of the buffer's size. The epilogue then writes, with ordinary
// stores (NOTE [Streaming stores]), lines the product left in the cache and whose
// write-back was due anyway, where it streamed 16 MB to a fresh buffer: 2048^2 + bias +
// ReLU's epilogue kernel 1.28-1.34 -> 0.65-0.69 ms back to back. Fewer fresh blocks too.
constexpr size_t kMaxDonorWalk = 256;  // nodes of the expression searched for donors
std::shared_ptr<Memory> donated_memory(const Node* v, const std::vector<const Node*>& exprs) {
  const View& view = v->view();
  if (!(view == View::contiguous(view.sizes))) return nullptr;
  // Candidates with the loads seen of each: a donor's references all come from this
  // expression's loads (each distinct load holds it once), so one held elsewhere (a live
  // tensor's buffer) is dropped before the walks below, which cost more than the search.
  std::vector<std::pair<const Node*, long>> found;
  bool whole = walk_within(exprs.front(), kMaxDonorWalk, [&](const Node* n, std::vector<const Node*>& more) {
    if (n->op == Op::Load || n->op == Op::Gather) {
      const Node* d = n->src[0].get();
      auto it = std::find_if(found.begin(), found.end(), [&](const auto& f) { return f.first == d; });
      if (it != found.end()) {
        it->second++;
      } else if (n->op == Op::Load && d->realized && d->realized->owned &&
                 d->realized.use_count() == 1 && int64_t(d->realized->nbytes) == v->shape[0] &&
                 itemsize(n->dtype) == itemsize(v->dtype) && n->view() == view) {
        found.push_back({d, 1});
      }
      if (n->op == Op::Gather) more.push_back(n->src[1].get());
      return true;
    }
    for (const auto& src : n->src) more.push_back(src.get());
    return true;
  });
  std::vector<const Node*> donors;
  for (const auto& [d, loads] : found)
    if (donors.size() < 2 && (!whole || d->weak_from_this().use_count() <= loads))
      donors.push_back(d);
  if (!donors.empty() && has_strict_ops(exprs)) return nullptr;
  for (const Node* d : donors)
    if (can_reuse_base(v, d, exprs, /*held_by_write=*/false)) return d->realized;
  return nullptr;
}


// NOTE [Superseded bases]: `exp_avg.mul_(b1).add_(g, alpha=1 - b1)` leaves two whole
// writes on the moment's buffer, and the first, superseded (NOTE [Superseded writes]), is
// never realized: fusion inlines its value into the second's. The realized value below
// such writes is the second's base in effect, and the second computes into its memory
// under reinplacing's rules (NOTE [Reinplacing]) when the superseded writes are held by
// nothing but the write above each. They computed into fresh memory: an Adam step over a
// 1024^2 parameter stored both moments and the gradient to three fresh blocks, each line
// read for ownership first (11 passes over 4 MB, 1.19-1.26 ms; now 8).
// The realized value under `write`'s superseded whole writes (pushed to `chain`), or null.
const Node* superseded_base(const Node* write, std::vector<const Node*>& chain) {
  const Node* b = write->src[0].get();
  while (!b->realized && b->op == Op::Store && b->owner.expired() && b->dtype == write->dtype &&
         b->view() == write->view() && b->weak_from_this().use_count() == 1) {
    chain.push_back(b);
    b = b->src[0].get();
  }
  return chain.empty() || !b->realized ? nullptr : b;
}


}  // namespace

std::shared_ptr<Memory> reused_memory(const Node* w, const std::vector<const Node*>& exprs) {
  std::vector<const Node*> chain;
  const Node* old = superseded_base(w, chain);
  bool loaded = false;
  bool own = old && can_reuse_base(w, old, exprs, true, chain, &loaded);
  if (own && loaded && has_strict_ops(exprs)) return nullptr;  // NOTE [Strict kernels]
  if (own && loaded) {
    metrics().superseded_bases++;
    return old->realized;
  }
  if (auto d = donated_memory(w, exprs)) {
    metrics().donated_stores++;
    return d;
  }
  if (!own) return nullptr;
  metrics().superseded_bases++;
  return old->realized;
}

}  // namespace loom
