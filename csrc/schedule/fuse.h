// Fusion: rewrite a value so that every Load in it reads a realized storage, inlining
// producers whose layout allows it and realizing the others.
#pragma once

#include <memory>
#include <vector>

#include "core/memory.h"
#include "core/node.h"

namespace loom {

// Loads of `keep` (a pending state that the caller schedules itself) are left as they are.
// A reduction read through a broadcast is computed into storage of its own, unless
// `inline_broadcasts` (then *inlined tells whether there was one): the caller checks that
// the kernel computes it once per row (place_reductions) and otherwise fuses again.
// With `store_shared_parts` (a value computed by reductions, stored whole), its parts
// computed by reductions that other pending values read are stored first, on their own
// (NOTE [Shared statistics]).
// With `cohort`, the pending members of the cohort of the reduction that `value` is
// (NOTE [Cohorts]) are fused too, each as a value of `value`'s shape for the same kernel
// (*inlined covers them too).
struct CohortValue {
  NodeRef member;  // the member as the graph holds it
  NodeRef fused;   // as fusion rewrote it
  NodeRef value;   // fused, in the shape of the value stored
};
// With `siblings` (NOTE [Sibling stores] in realize.cpp), loads of each sibling's pending
// store inline its value although its buffer lives on, and each still pending afterwards
// gets its value as fused here (shared with the copy inlined), for the caller to store.
struct SiblingStore {
  NodeRef flat;                 // the sibling's pending store
  NodeRef value;                // its value, fused
  std::shared_ptr<Memory> mem;  // where the kernel stores it
};
NodeRef fuse(const NodeRef& value, const Node* keep = nullptr, bool inline_broadcasts = false,
             bool* inlined = nullptr, bool store_shared_parts = false,
             std::vector<CohortValue>* cohort = nullptr,
             std::vector<SiblingStore>* siblings = nullptr);

// After a kernel stored `c.value` contiguously into `mem`: the member's storage.
void set_cohort_stored(const CohortValue& c, const View& view, std::shared_ptr<Memory> mem);

// Whether `flat` stores into scratch storage that fusion made for a broadcast reduction.
bool is_scratch(const Node* flat);

// Whether computing the value runs a reduction or scan (one not yet stored).
bool computes_reduction(const NodeRef& value);

}  // namespace loom
