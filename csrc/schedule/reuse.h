// Which memory a store computes into instead of a fresh block: its base's (NOTE
// [Reinplacing]), its old value's under superseded writes (NOTE [Superseded bases]), or a
// dying temporary's (NOTE [Donated memory]).
#pragma once

#include <memory>
#include <vector>

#include "core/memory.h"
#include "core/node.h"
#include "core/node_map.h"

namespace loom {

// Whether two views' element ranges cannot meet (a conservative test on their spans).
bool disjoint(const View& a, const View& b);

// Whether `write` may compute into `base`'s memory: nothing outside its kernel's
// expressions `exprs` reads `base` again, and they read it only at the elements written.
bool can_reuse_base(const Node* write, const Node* base, const std::vector<const Node*>& exprs,
                    bool held_by_write = true, const std::vector<const Node*>& chain = {},
                    bool* loaded = nullptr);

// Whether the expressions hold an op with a strict path within their first nodes (NOTE
// [Strict kernels]): the kernel computing them should not read memory it writes.
constexpr size_t kMaxStrictWalk = 256;
bool has_strict_ops(const std::vector<const Node*>& exprs);

// The memory that a store covering its whole buffer computes into, other than a fresh
// block: its own old value's where it reads it (NOTE [Superseded bases]), a dying donor's
// (NOTE [Donated memory]), else its old value's though unread. A base it reads (or a
// superseded write's value reads) is taken first: the kernel loads each of its lines
// anyway, and a donor then goes to another store.
std::shared_ptr<Memory> reused_memory(const Node* w, const std::vector<const Node*>& exprs);

// Walks the nodes below `root` once each, depth first: `visit(n, more)` pushes onto `more`
// the nodes to walk next, or returns false to stop. Returns false when stopped or when
// more than `limit` nodes were met.
template <typename Visit>
bool walk_within(const Node* root, size_t limit, Visit visit) {
  NodeSet seen;
  std::vector<const Node*> stack{root};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n)) continue;
    if (seen.size() > limit || !visit(n, stack)) return false;
  }
  return true;
}

}  // namespace loom
