// The system BLAS (OpenBLAS through libblas.so.3 on Debian), loaded at first use.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace loom {

// C = alpha * op(A) @ op(B) + beta * C, row-major, for Float32 and Float64. A is m x k
// after op (trans_a: A is stored k x m), B is k x n after op. Throws std::runtime_error
// when no BLAS can be loaded (LOOM_BLAS names the library to load instead).
void gemm(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);

}  // namespace loom
