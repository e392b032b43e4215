// The system BLAS (OpenBLAS through libblas.so.3 on Debian), loaded at first use.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace loom {

// C = alpha * op(A) @ op(B) + beta * C, row-major, for Float32 and Float64. A is m x k
// after op (trans_a: A is stored k x m), B is k x n after op. Throws std::runtime_error
// when no BLAS can be loaded (LOOM_BLAS names the library to load instead).
void gemm(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc);

// One product of a batch: its operands and result (layouts are the batch's).
// Whether bfloat16 products run on oneDNN's native bfloat16 matmul (NOTE [bfloat16
// products] in blas.cpp): gemm and gemm_batch then take bfloat16 operands with a float32
// result (alpha 1, beta 0).
bool native_bf16_gemm();

struct GemmJob {
  const void* a;
  const void* b;
  void* c;
};

// NOTE [BLAS threads]: Loom runs products on its own thread pool, splitting a batch (and
// the rows of its results) into single-threaded BLAS calls, so that the many small
// products of a convolution or of attention heads do not each fork and join BLAS's
// threads, and so that their speed does not depend on torch.set_num_threads: OpenMP
// OpenBLAS shares the process's OpenMP runtime with torch, and takes its thread count from
// the calling thread's OpenMP setting. A call is single-threaded when the BLAS is
// sequential, or OpenMP OpenBLAS with the calling thread's OpenMP thread count set to 1
// around the call (a per-thread setting, restored after). Any other BLAS gets the batch in
// order on the calling thread, with its own threads.
void gemm_batch(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                int64_t lda, int64_t ldb, int64_t ldc, const std::vector<GemmJob>& jobs);

}  // namespace loom
