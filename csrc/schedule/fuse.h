// Fusion: rewrite a value so that every Load in it reads a realized storage, inlining
// producers whose layout allows it and realizing the others.
#pragma once

#include "core/node.h"

namespace loom {

NodeRef fuse(const NodeRef& value);

}  // namespace loom
