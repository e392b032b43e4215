// The caching allocator's blocks (core/memory.h): sizes, reuse, and the huge pages of
// large blocks (NOTE [Huge pages]).
#include "core/memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace loom {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

// Whether the kernel gives transparent huge pages where they are asked for.
bool huge_pages_on_request() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return false;
  return line.find("[never]") == std::string::npos;
}

// The VmFlags of the mapping holding `p`, from /proc/self/smaps ("" where not found).
std::string vm_flags(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::ifstream f("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(f, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

// Each test starts from an empty cache: a cached block up to twice the size asked for
// would be handed out instead of a new one.
TEST(Memory, LargeBlocksAreWholeHugePages) {
  empty_memory_cache();
  auto m = allocate_memory(64 * kMiB);
  EXPECT_EQ(m->capacity, 64 * kMiB);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data) % (2 * kMiB), 0u);
  std::memset(m->data, 1, m->nbytes);  // usable to its end
  if (huge_pages_on_request()) EXPECT_NE(vm_flags(m->data).find(" hg"), std::string::npos);

  auto odd = allocate_memory(4 * kMiB + 1);
  EXPECT_EQ(odd->capacity, 6 * kMiB);
  EXPECT_EQ(odd->nbytes, 4 * kMiB + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(odd->data) % (2 * kMiB), 0u);
}

TEST(Memory, SmallBlocksKeepPageGranularity) {
  empty_memory_cache();
  auto m = allocate_memory(4 * kMiB - 1);
  EXPECT_EQ(m->capacity, 4 * kMiB);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data) % 64, 0u);
  auto tiny = allocate_memory(100);
  EXPECT_EQ(tiny->capacity, 128u);
}

TEST(Memory, FreedHugeBlockIsHandedOutAgain) {
  empty_memory_cache();
  void* first = nullptr;
  {
    auto m = allocate_memory(24 * kMiB + 5);
    first = m->data;
  }
  // Up to twice the size asked for is reused: the same rounded capacity certainly is.
  auto again = allocate_memory(24 * kMiB + 5);
  EXPECT_EQ(again->data, first);
  EXPECT_EQ(again->capacity, 26 * kMiB);
}

}  // namespace
}  // namespace loom
