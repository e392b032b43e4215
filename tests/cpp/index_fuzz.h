// A fuzz case for the engine's index arithmetic: the layout predicates (core/layout.h),
// compose_through, the composition of reindexes (core/graph.h) and the loop collapsing of
// lowered kernels (codegen/kernel.h). Every rewrite is checked by evaluating the index
// before and after it, on every point of small index spaces and random points of large
// ones. Shared by the libFuzzer target (tests/fuzz) and a seeded driver under ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::fuzz {

// Runs the case that `data` encodes (any bytes are a valid case); returns "" when every
// check holds, else what went wrong.
std::string index_case(const uint8_t* data, size_t size);

}  // namespace loom::fuzz
