// Buffers for engine tests: filled from the host, read back realized.
#pragma once

#include <memory>
#include <vector>

#include "core/graph.h"
#include "schedule/realize.h"

namespace loom::test_util {

// A buffer holding `v` (buffers are neither copied nor moved: the engine knows them by address).
inline std::unique_ptr<Buffer> make_f32(const std::vector<float>& v) {
  auto b = std::make_unique<Buffer>(int64_t(v.size() * 4));
  write_host(*b, v.data(), v.size() * 4);
  return b;
}

template <typename T>
std::vector<T> read_as(Buffer& b) {
  const T* p = static_cast<const T*>(realized_data(b));
  return std::vector<T>(p, p + b.nbytes / sizeof(T));
}

inline std::vector<float> read_f32(Buffer& b) { return read_as<float>(b); }

}  // namespace loom::test_util
