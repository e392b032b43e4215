#include "runtime/compiler.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <list>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "codegen/ops_c.h"
#include "core/metrics.h"
#include "runtime/disk_cache.h"
#include "runtime/executor.h"
#include "runtime/jit.h"

namespace loom {

namespace {

// NOTE [Kernel flags]: -O3 minus three things that cost seconds on a few tiny kernels
// (gcc 12 spent 8.8 s on a 4x6 uint8 loop) and bought nothing measurable on the bench
// kernels: vectorized epilogues of vectorized loops, predictive commoning, and peeling
// loops completely more than 4 times. -fno-trapping-math lets if-conversion evaluate
// both sides of a select (what PyTorch's own build uses; no value changes);
// -fopenmp-simd enables the `omp simd` lane loops of reductions. Products fuse into FMAs
// only within one C expression (-ffp-contract=on; gcc before 14 reads it as off), never
// across the renderer's statements (NOTE [No contraction]). Linking without the
// C runtime (-nostdlib, libm and libgcc named) saves a quarter of a small kernel's time.
const char* kFlags =
    "-O3 -march=native --param vect-epilogues-nomask=0 -fno-predictive-commoning "
    "--param max-completely-peel-times=4 -fPIC -shared -nostdlib -std=gnu11 -fno-math-errno "
    "-fno-trapping-math -ffp-contract=on -fwrapv -fno-strict-aliasing -fopenmp-simd -w";
const char* kLibs = "-lm -lgcc";  // after the source, as the linker wants

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string run_capture(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    *status = -1;
    return "popen failed";
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

void make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    mkdir(cur.c_str(), 0755);
  }
}

std::string compiler() {
  const char* cc = std::getenv("LOOM_CC");
  return cc && *cc ? cc : "cc";
}

// Whether kernels compile in the process (NOTE [In-process compiler]); read at every
// compile, so that a program may set LOOM_CC on the way.
bool in_process() {
  const char* cc = std::getenv("LOOM_CC");
  return !(cc && *cc) && jit::available();
}

// The compiler's identity, part of every cache key.
const std::string& compiler_version() {
  static const std::string v = [] {
    int status = 0;
    std::string out = run_capture(compiler() + " --version", &status);
    return out.substr(0, out.find('\n'));
  }();
  return v;
}

}  // namespace

// NOTE [Loaded kernels]: a program whose kernels keep changing (a constant that differs
// every step, such as Adam's bias corrections) would otherwise keep every library it ever
// loaded mapped, ~30 KB each. Past 1024 kernels the cache lets go of the least recently used
// kernel; it is on disk, so using it again costs a load, not a compile. A library is
// closed when its last holder lets go: a kernel plan (runtime/plan.h) keeps its kernel
// loaded, and plans are bounded by the same number. LOOM_MAX_LOADED_KERNELS overrides.
size_t max_loaded_kernels() {
  static const size_t n = [] {
    const char* s = std::getenv("LOOM_MAX_LOADED_KERNELS");
    long v = s ? std::atol(s) : 0;
    return v > 0 ? size_t(v) : size_t(1024);
  }();
  return n;
}

namespace {

struct Loaded {
  std::shared_ptr<const CompiledKernel> kernel;
  std::list<const std::string*>::iterator age;
};

struct Cache {
  std::mutex mu;
  std::unordered_map<std::string, Loaded> by_source;
  std::list<const std::string*> lru;  // sources, most recently used first
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked: kernels stay loaded until exit
  return *c;
}

}  // namespace

std::string compiler_command(bool quick) {
  if (in_process()) return jit::identity(quick);
  const char* extra = std::getenv("LOOM_CFLAGS");  // appended: a later -O wins
  return compiler() + " " + kFlags + (extra && *extra ? std::string(" ") + extra : "") +
         (quick ? " -O0" : "");
}

std::string cache_dir() {
  const char* d = std::getenv("LOOM_CACHE_DIR");
  if (d && *d) return d;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/loom";
}

CompiledKernel::~CompiledKernel() {
  finish_tasks(false);  // an issued task may still run this kernel
  if (lib) dlclose(lib);
  jit::unload(module);
}

// NOTE [Compile tiers]: clang takes 15-25 ms to optimize even a three-op kernel (its
// pass pipeline and code generation, spread over a hundred passes, not the source's size)
// and 4-5 ms at -O0, whose code runs 20-100 times slower. Kernels over little work
// (points of their loop nest times their nodes, below quick_work_limit(): at most a
// millisecond at -O0) are compiled at -O0 first; each keeps its source and counts its
// runs, and at its third (quick_runs()) it is compiled again optimized and its plans run
// the new one from then on: a kernel run again and again is in a loop, where optimized
// code pays back, while one run once or twice on a small tensor (most of an interactive
// program's kernels, and of a test suite's) never pays for optimization. A plan whose
// work wants an optimized kernel, finding a quick one of the same source (a kernel's
// source does not always depend on its sizes), has it optimized at once. LOOM_QUICK_RUNS
// sets the run (0: quick kernels stay so, which the tests comparing tiers use). The two
// compiles give the same bits: the source decides every rounding (FMAs included, NOTE
// [No contraction] in codegen/render_c.cpp) and floating point is
// strict at every level. The disk cache keeps each tier's object under its own key; an
// optimized one found there is loaded in place of a quick compile. LOOM_QUICK_WORK sets
// the limit (0: every kernel is compiled optimized).
int64_t quick_work_limit() {
  static const int64_t n = [] {
    const char* s = std::getenv("LOOM_QUICK_WORK");
    return s && *s ? std::max<int64_t>(0, std::atoll(s)) : int64_t(1) << 16;
  }();
  return n;
}

int quick_runs() {
  static const int n = [] {
    const char* s = std::getenv("LOOM_QUICK_RUNS");
    return s && *s ? std::max(0, std::atoi(s)) : 3;
  }();
  return n;
}

namespace {

// A kernel for `source` from the disk cache, or compiled (`*compiled` then set): optimized,
// unless `quick`, when an optimized object on disk is still taken first. Under the cache's
// lock.
std::shared_ptr<CompiledKernel> build(const std::string& source, bool quick, bool* compiled) {
  const bool jit = in_process();
  struct Entry {
    std::string cmd, name, out, source_path;
    uint64_t key2 = 0;
  };
  const std::string dir = cache_dir();
  make_dirs(dir);
  auto entry = [&](bool q) {
    Entry e;
    e.cmd = compiler_command(q);
    // The entry format is part of the key, so files of older formats are never looked at.
    const std::string key = source + "\n" + e.cmd +
                            (jit ? "" : std::string(" ") + kLibs + "\n" + compiler_version()) +
                            (jit ? "\nsealed-object-v1" : "\nsealed-v1");
    const uint64_t h = fnv1a(key);
    e.key2 = checksum64(key.data(), key.size(), h);
    char name[32];
    std::snprintf(name, sizeof name, "k_%016llx", (unsigned long long)h);
    e.name = name;
    e.source_path = dir + "/" + e.name + ".c";
    e.out = dir + "/" + e.name + (jit ? ".o" : ".so");
    return e;
  };
  auto k = std::make_shared<CompiledKernel>();
  // Links the object (in-process route) or loads the library of `e`; false with the
  // reason in `error`.
  auto link = [&](const Entry& e, const std::string& object, std::string* error) {
    if (jit) {
      void* fn = nullptr;
      k->module = jit::load(object, e.name, &fn, error);
      k->fn = reinterpret_cast<KernelFn>(fn);
      return k->module != nullptr;
    }
    k->lib = dlopen(e.out.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!k->lib) *error = dlerror();
    return k->lib != nullptr;
  };
  auto found = [&](const Entry& e, bool q) {
    k->name = e.name;
    k->source_path = e.source_path;
    k->quick = q;
    if (k->lib) k->fn = reinterpret_cast<KernelFn>(dlsym(k->lib, "kernel"));
    if (!k->fn)
      throw std::runtime_error("loom: kernel " + e.source_path + " defines no `kernel` symbol");
    if (q) k->source = source;
    return k;
  };
  const Entry full = entry(false);
  for (bool q : {false, true}) {
    if (q && !quick) break;
    const Entry e = q ? entry(true) : full;
    if (!file_exists(e.out)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    // NOTE [Sealed cache entries] (runtime/disk_cache.h): never load an unchecked file.
    // The source beside the object must be intact too: error messages and LOOM_DEBUG
    // point users at it.
    std::string object, error;
    if (file_holds(e.source_path, source) && read_sealed(e.out, e.key2, jit ? &object : nullptr) &&
        link(e, object, &error)) {
      metrics().disk_hits++;
      touch_entry(e.source_path, e.out);  // NOTE [Cache size]
      metrics().load_us += std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - t0)
                               .count();
      return found(e, q);
    }
    metrics().disk_rejects++;
    if (debug_level() >= 2)
      std::fprintf(stderr, "loom: cache entry %s is damaged\n", e.name.c_str());
  }
  const Entry e = quick ? entry(true) : full;
  // Written under temporary names and renamed, so a concurrent process never loads half
  // a file.
  if (!write_file(e.source_path, source))
    throw std::runtime_error("loom: cannot write kernel source " + e.source_path);
  const std::string tag = "." + std::to_string(getpid()) + ".tmp";
  bool ok = false;
  std::string log, object;
  auto t0 = std::chrono::steady_clock::now();
  if (jit) {
    static const std::string prelude =
        std::string(c_libc_decls()) + c_prelude() + c_math_prelude();
    jit::set_prelude(prelude, dir);
    ok = jit::compile(source, e.source_path, quick, &object, &log);
    if (ok) {
      std::ofstream f(e.out + tag, std::ios::binary);
      f.write(object.data(), std::streamsize(object.size()));
      f.close();
      ok = bool(f);
      if (!ok) log = "cannot write " + e.out + tag;
    }
  } else {
    int status = 0;
    log = run_capture(e.cmd + " -o '" + e.out + tag + "' '" + e.source_path + "' " + kLibs,
                      &status);
    ok = status == 0;
  }
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
  metrics().compile_us += us;
  if (debug_level() >= 2)
    std::fprintf(stderr, "loom: compiled %s%s in %.1f ms\n", e.name.c_str(),
                 quick ? " (quick)" : "", us / 1e3);
  if (!ok) {
    std::remove((e.out + tag).c_str());
    throw std::runtime_error("loom: compiling kernel " + e.source_path + " failed (" +
                             (jit ? std::string("clang in process") : e.cmd) + "):\n" + log);
  }
  if (!seal_object(e.out + tag, e.key2)) {
    std::remove((e.out + tag).c_str());
    throw std::runtime_error("loom: cannot write kernel " + e.out + " compiled from " +
                             e.source_path);
  }
  std::rename((e.out + tag).c_str(), e.out.c_str());
  note_cache_write(dir);  // NOTE [Cache size]
  std::string error;
  if (!link(e, object, &error))
    throw std::runtime_error("loom: cannot load kernel " + e.out + " compiled from " +
                             e.source_path + ": " + error);
  *compiled = true;
  return found(e, quick);
}

// Keeps `k` loaded as the kernel of `source`, letting go of the least recently used.
void keep(Cache& c, const std::string& source, std::shared_ptr<const CompiledKernel> k) {
  auto pos = c.by_source.find(source);
  if (pos != c.by_source.end()) {  // an optimized kernel replaces a quick one
    pos->second.kernel = std::move(k);
    c.lru.splice(c.lru.begin(), c.lru, pos->second.age);
    return;
  }
  pos = c.by_source.emplace(source, Loaded{std::move(k), {}}).first;
  c.lru.push_front(&pos->first);
  pos->second.age = c.lru.begin();
  if (c.by_source.size() > max_loaded_kernels()) {
    auto victim = c.by_source.find(*c.lru.back());
    c.lru.pop_back();
    c.by_source.erase(victim);
    metrics().kernels_unloaded++;
  }
}

// The optimized kernel of `source`, kept in place of its quick one (which lives on while a
// plan or a task holds it). Under the cache's lock.
std::shared_ptr<const CompiledKernel> optimize(Cache& c, const std::string& source) {
  bool compiled = false;
  std::shared_ptr<const CompiledKernel> k = build(source, false, &compiled);
  if (compiled) metrics().kernels_optimized++;
  keep(c, source, k);
  return k;
}

}  // namespace

std::shared_ptr<const CompiledKernel> compile_kernel(const std::string& source, bool quick) {
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.by_source.find(source);
  if (it != c.by_source.end() && (quick || !it->second.kernel->quick)) {
    metrics().cache_hits++;
    c.lru.splice(c.lru.begin(), c.lru, it->second.age);
    return it->second.kernel;
  }
  if (it != c.by_source.end()) return optimize(c, source);  // work that wants it optimized
  bool compiled = false;
  std::shared_ptr<const CompiledKernel> k = build(source, quick, &compiled);
  if (compiled) metrics().kernels_compiled++;
  keep(c, source, k);
  return k;
}

std::shared_ptr<const CompiledKernel> optimized_kernel(
    const std::shared_ptr<const CompiledKernel>& quick) {
  if (!quick->quick) return quick;
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.by_source.find(quick->source);
  if (it != c.by_source.end() && !it->second.kernel->quick) return it->second.kernel;
  return optimize(c, quick->source);
}

}  // namespace loom
