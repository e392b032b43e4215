#include "runtime/blas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

namespace loom {

namespace {

// CBLAS enums, as every CBLAS defines them.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                       int, float, float*, int);
using Dgemm = void (*)(int, int, int, int, int, int, double, const double*, int, const double*,
                       int, double, double*, int);

struct Blas {
  Sgemm sgemm = nullptr;
  Dgemm dgemm = nullptr;
};

const Blas& blas() {
  static Blas b = [] {
    const char* env = std::getenv("LOOM_BLAS");
    std::string lib = env && *env ? env : "libblas.so.3";
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw std::runtime_error("loom: cannot load BLAS " + lib + ": " + dlerror());
    Blas r;
    r.sgemm = reinterpret_cast<Sgemm>(dlsym(h, "cblas_sgemm"));
    r.dgemm = reinterpret_cast<Dgemm>(dlsym(h, "cblas_dgemm"));
    if (!r.sgemm || !r.dgemm) throw std::runtime_error("loom: " + lib + " has no cblas_?gemm");
    return r;
  }();
  return b;
}

}  // namespace

void gemm(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
          int64_t ldc) {
  const Blas& l = blas();
  int ta = trans_a ? kTrans : kNoTrans, tb = trans_b ? kTrans : kNoTrans;
  if (t == DType::Float32)
    l.sgemm(kRowMajor, ta, tb, int(m), int(n), int(k), float(alpha), static_cast<const float*>(a),
            int(lda), static_cast<const float*>(b), int(ldb), float(beta), static_cast<float*>(c),
            int(ldc));
  else if (t == DType::Float64)
    l.dgemm(kRowMajor, ta, tb, int(m), int(n), int(k), alpha, static_cast<const double*>(a),
            int(lda), static_cast<const double*>(b), int(ldb), beta, static_cast<double*>(c),
            int(ldc));
  else
    throw std::logic_error(std::string("loom: gemm of ") + dtype_name(t));
}

}  // namespace loom
