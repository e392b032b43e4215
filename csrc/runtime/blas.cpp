#include "runtime/blas.h"

#include <dlfcn.h>

#include <algorithm>
#include <numeric>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "runtime/thread_pool.h"

#ifdef LOOM_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <tuple>
#endif

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
  // See NOTE [BLAS threads]: set when one call can be made single-threaded, for each.
  bool serial_sgemm = false, serial_dgemm = false;
  int (*omp_get_max_threads)() = nullptr;
  void (*omp_set_num_threads)(int) = nullptr;
};

#ifdef LOOM_HAVE_DNNL
// NOTE [oneDNN sgemm]: float32 products run on oneDNN's sgemm where Loom has oneDNN (as
// its convolutions do) and LOOM_BLAS does not name a BLAS: oneDNN generates its kernels
// for the CPU it finds, where OpenBLAS 0.3.21 picks its kernels by CPU model and fell
// back to SSE3 on this AVX-512 machine (40 GFLOP/s against oneDNN's 200-265). With
// OpenBLAS told the right core, oneDNN was still 10-30% faster here on the MLP's shapes.
// oneDNN runs on OpenMP like OpenMP OpenBLAS, so calls are made single-threaded the same
// way.
void onednn_sgemm(int, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc) {
  const dnnl_status_t st = dnnl_sgemm(ta == kTrans ? 'T' : 'N', tb == kTrans ? 'T' : 'N', m, n, k,
                                      alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    throw std::runtime_error("loom: oneDNN's sgemm failed (status " + std::to_string(int(st)) +
                             ")");
}

// NOTE [bfloat16 products]: where oneDNN has a native bfloat16 matmul (AMX or AVX512-BF16;
// this VM has both), a bfloat16 product runs on it, its float32 result rounded to bfloat16
// once, as the CPU's own bfloat16 products are. One thread's 512x1024 by 1024x1024 (B
// transposed, random data) took 1.27 ms on AMX in a harness; the float32 sgemm of the
// widened operands (NOTE [Reduced-float products]) 3 ms. In Loom, `F.linear(x, x)` over
// 1024x1024 bfloat16 6.5 -> 1.4-1.5 ms (eager 2.1-2.2), a 512^3 product 0.94 -> 0.23-0.25
// (0.27-0.36).
// Primitives are made per shape, strides and thread count (a primitive fixes its thread
// count when made: NOTE [oneDNN threads]), kept in a small cache. A product split across
// the pool runs one single-threaded primitive per row block, as sgemm does: on OpenMP's
// two threads from the executor it took 5.2 ms.
using BfKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int>;

// One engine for primitives and the memory they run on (oneDNN wants the same one).
const dnnl::engine& bf16_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// oneDNN 3 (Debian trixie's) dropped the operation descriptors: a primitive descriptor
// takes the engine and memory descriptors directly.
dnnl::matmul::primitive_desc matmul_pd(const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                                       const dnnl::memory::desc& c,
                                       const dnnl::primitive_attr& attr = {}) {
#if DNNL_VERSION_MAJOR >= 3
  return dnnl::matmul::primitive_desc(bf16_engine(), a, b, c, attr);
#else
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, bf16_engine());
#endif
}

// A primitive with its scratchpad's description: each execution brings its own scratchpad,
// since two threads run one primitive at once (the row blocks of a product), and the
// library's own scratchpad is the primitive's, shared: a 64x96 by 96x80 product came out
// wrong in 40% of its elements under that race, and the two threads' writes to one buffer
// held `F.linear(x, x)` over 1024x1024 at 2.3-2.5 ms of product where it takes 1.3 now.
struct Bf16Plan {
  dnnl::matmul prim;
  dnnl::memory::desc a, b, c, scratch;  // the operands' strided layouts, the scratchpad
};

std::shared_ptr<Bf16Plan> bf16_primitive(const BfKey& key) {
  static std::mutex mu;
  static std::map<BfKey, std::shared_ptr<Bf16Plan>> cache;
  std::lock_guard<std::mutex> g(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto [ta, tb, m, n, k, lda, ldb, ldc, threads] = key;
  using md = dnnl::memory::desc;
  using dt = dnnl::memory::data_type;
  md a({m, k}, dt::bf16, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
  md b({k, n}, dt::bf16, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
  md c({m, n}, dt::f32, dnnl::memory::dims{ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc pd = matmul_pd(a, b, c, attr);
  auto plan = std::make_shared<Bf16Plan>(Bf16Plan{dnnl::matmul(pd), a, b, c, pd.scratchpad_desc()});
  if (cache.size() >= 256) cache.clear();
  cache.emplace(key, plan);
  return plan;
}

void onednn_bf16_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a,
                      int64_t lda, const void* b, int64_t ldb, float* c, int64_t ldc, int threads) {
  auto plan = bf16_primitive({ta, tb, m, n, k, lda, ldb, ldc, threads});
  const dnnl::engine& engine = bf16_engine();
  thread_local dnnl::stream stream(engine);
  dnnl::memory am(plan->a, engine, const_cast<void*>(a));
  dnnl::memory bm(plan->b, engine, const_cast<void*>(b));
  dnnl::memory cm(plan->c, engine, c);
  dnnl::memory scratch(plan->scratch, engine);
  plan->prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm},
                              {DNNL_ARG_SCRATCHPAD, scratch}});
  stream.wait();
}
#endif

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
    // OpenBLAS says how it was built: 0 sequential, 1 pthreads, 2 OpenMP. The OpenMP
    // functions resolve through the library's dependencies.
    auto parallel = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_parallel"));
    int kind = parallel ? parallel() : -1;
    r.omp_get_max_threads = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_max_threads"));
    r.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
    const bool omp = r.omp_get_max_threads && r.omp_set_num_threads;
    r.serial_sgemm = r.serial_dgemm = kind == 0 || (kind == 2 && omp);
#ifdef LOOM_HAVE_DNNL
    if (!env || !*env) {
      r.sgemm = onednn_sgemm;
      if (!omp) {  // a BLAS without OpenMP: oneDNN brought the runtime
        void* get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
        void* set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
        r.omp_get_max_threads = reinterpret_cast<int (*)()>(get);
        r.omp_set_num_threads = reinterpret_cast<void (*)(int)>(set);
      }
      r.serial_sgemm = r.omp_get_max_threads && r.omp_set_num_threads;
    }
#endif
    return r;
  }();
  return b;
}

struct BatchState {
  DType t;
  int64_t out_size;  // the result's element size (float32 for bfloat16 operands)
  bool ta, tb;
  int64_t m, n, k, lda, ldb, ldc, blocks, rows;
  const std::vector<GemmJob>* jobs;
};

// Tasks [s, e) of a batch: task i is row block i % blocks of job i / blocks.
void batch_tasks(char** bufs, int64_t s, int64_t e) {
  const BatchState& st = *reinterpret_cast<const BatchState*>(bufs[0]);
  const Blas& l = blas();
  const int before = l.omp_get_max_threads ? l.omp_get_max_threads() : 1;
  if (before != 1) l.omp_set_num_threads(1);
  const int64_t size = itemsize(st.t);
  for (int64_t i = s; i < e; ++i) {
    const GemmJob& j = (*st.jobs)[size_t(i / st.blocks)];
    const int64_t r0 = (i % st.blocks) * st.rows, r1 = std::min(st.m, r0 + st.rows);
    // Rows r0.. of op(A): row r0 of a stored A, or column r0 of a stored A^T.
    const char* a = static_cast<const char*>(j.a) + (st.ta ? r0 : r0 * st.lda) * size;
    char* c = static_cast<char*>(j.c) + r0 * st.ldc * st.out_size;
    gemm(st.t, st.ta, st.tb, r1 - r0, st.n, st.k, 1.0, a, st.lda, j.b, st.ldb, 0.0, c, st.ldc);
  }
  if (before != 1) l.omp_set_num_threads(before);
}

}  // namespace

void gemm_batch(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                int64_t lda, int64_t ldb, int64_t ldc, const std::vector<GemmJob>& jobs) {
  const int threads = num_threads();
  const Blas& l = blas();
  const bool serial = t == DType::Float32    ? l.serial_sgemm
                      : t == DType::Float64 ? l.serial_dgemm
                                            : l.omp_get_max_threads && l.omp_set_num_threads;
  if (!serial || threads == 1) {
    for (const GemmJob& j : jobs)
      gemm(t, trans_a, trans_b, m, n, k, 1.0, j.a, lda, j.b, ldb, 0.0, j.c, ldc);
    return;
  }
  // A few jobs split into row blocks so that every thread gets the same number of
  // blocks; no more than that: each call packs all of B again, so thinner blocks cost more
  // than they balance (256x784x1024 in 8 blocks on 2 threads ran at 113 GFLOP/s, in 2 at
  // 134). Blocks are no thinner than 32 rows; a task of under ~64K multiply-adds costs
  // less than handing it to another thread.
  const int64_t count = int64_t(jobs.size());
  int64_t blocks = count < 4 * threads ? threads / std::gcd(count, int64_t(threads)) : 1;
  while (blocks > 1 && m / blocks < 32) --blocks;
  const int64_t out_size = t == DType::BFloat16 ? 4 : itemsize(t);
  BatchState st{t,   out_size, trans_a, trans_b, m, n, k, lda, ldb, ldc, blocks,
                (m + blocks - 1) / blocks, &jobs};
  char* bufs[1] = {reinterpret_cast<char*>(&st)};
  const int64_t per_task = std::max<int64_t>(1, st.rows * n * k);
  run_parallel(batch_tasks, bufs, count * blocks, std::max<int64_t>(1, (int64_t(1) << 16) / per_task));
}

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
#ifdef LOOM_HAVE_DNNL
  else if (t == DType::BFloat16 && alpha == 1.0 && beta == 0.0)
    onednn_bf16_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, static_cast<float*>(c), ldc,
                     l.omp_get_max_threads ? l.omp_get_max_threads() : 1);
#endif
  else
    throw std::logic_error(std::string("loom: gemm of ") + dtype_name(t));
}

bool native_bf16_gemm() {
#ifdef LOOM_HAVE_DNNL
  static const bool native = [] {
    try {
      using md = dnnl::memory::desc;
      using dt = dnnl::memory::data_type;
      using tag = dnnl::memory::format_tag;
      const dnnl::matmul::primitive_desc pd = matmul_pd(
          md({64, 64}, dt::bf16, tag::ab), md({64, 64}, dt::bf16, tag::ab),
          md({64, 64}, dt::f32, tag::ab));
      const std::string impl = pd.impl_info_str();
      return impl.find("amx") != std::string::npos || impl.find("bf16") != std::string::npos;
    } catch (const std::exception&) {
      return false;
    }
  }();
  return native;
#else
  return false;
#endif
}

}  // namespace loom
