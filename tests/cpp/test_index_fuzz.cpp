// The index-arithmetic fuzz case (index_fuzz.h) fed by a seeded PRNG: a deterministic,
// brief run under ctest. `make test-fuzz` runs the same case under libFuzzer for longer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "index_fuzz.h"

TEST(IndexFuzz, SeededCases) {
  const char* env = std::getenv("LOOM_INDEX_FUZZ_CASES");
  const int cases = env ? std::atoi(env) : 20000;
  std::mt19937_64 rng(20261121);
  std::vector<uint8_t> bytes;
  for (int i = 0; i < cases; ++i) {
    bytes.resize(8 + rng() % 120);
    for (auto& b : bytes) b = uint8_t(rng());
    std::string failure = loom::fuzz::index_case(bytes.data(), bytes.size());
    ASSERT_EQ(failure, "") << "case " << i;
  }
}
