// Fusion: rewrite a value so that every Load in it reads a realized storage, inlining
// producers whose layout allows it and realizing the others.
#pragma once

#include "core/node.h"

namespace loom {

// Loads of `keep` (a pending state that the caller schedules itself) are left as they are.
NodeRef fuse(const NodeRef& value, const Node* keep = nullptr);

}  // namespace loom
