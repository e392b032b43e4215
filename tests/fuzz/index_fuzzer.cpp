// libFuzzer entry for the index-arithmetic fuzz case (tests/cpp/index_fuzz.h); built by
// `make test-fuzz` with clang. A failed check aborts with what went wrong.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "index_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string failure = loom::fuzz::index_case(data, size);
  if (!failure.empty()) {
    std::fprintf(stderr, "index fuzz: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
