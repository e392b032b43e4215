// Fusion: rewrite a value so that every Load in it reads a realized storage, inlining
// producers whose layout allows it and realizing the others.
#pragma once

#include "core/node.h"

namespace loom {

// Loads of `keep` (a pending state that the caller schedules itself) are left as they are.
// A reduction read through a broadcast is computed into storage of its own, unless
// `inline_broadcasts` (then *inlined tells whether there was one): the caller checks that
// the kernel computes it once per row (place_reductions) and otherwise fuses again.
// With `store_shared_parts` (a value computed by reductions, stored whole), its parts
// computed by reductions that other pending values read are stored first, on their own
// (NOTE [Shared statistics]).
NodeRef fuse(const NodeRef& value, const Node* keep = nullptr, bool inline_broadcasts = false,
             bool* inlined = nullptr, bool store_shared_parts = false);

// Whether `flat` stores into scratch storage that fusion made for a broadcast reduction.
bool is_scratch(const Node* flat);

// Whether computing the value runs a reduction or scan (one not yet stored).
bool computes_reduction(const NodeRef& value);

}  // namespace loom
