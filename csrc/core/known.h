// Integer values known on the host without running a kernel (NOTE [Known values]).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/node.h"

namespace loom {

// NOTE [Known values]: an index that the program built from constants (`arange`, `ones`,
// `full`, a few scalar setitems, integer arithmetic on them) has values that follow from
// the graph alone. Ops that take indices check them at the op when they are known (the
// CPU raises IndexError there), rather than at realization; computing them here runs no
// kernel and realizes nothing: the index stays pending and its kernel fuses as before.
//
// The values of the integer (or bool) value `v` at each of its coordinates, row-major,
// when the graph below it holds only constants, iotas, integer casts and arithmetic,
// comparisons, selects, reindexing, and loads of realized storage or of pending stores of
// such values; nullopt otherwise, or when it has more than `max_elements` elements or its
// graph more than `max_nodes` nodes (so asking stays cheap).
std::optional<std::vector<int64_t>> known_values(const NodeRef& v, int64_t max_elements,
                                                 int max_nodes = 4096);

}  // namespace loom
