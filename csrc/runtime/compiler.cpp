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
// -fopenmp-simd enables the `omp simd` lane loops of reductions. Linking without the
// C runtime (-nostdlib, libm and libgcc named) saves a quarter of a small kernel's time.
const char* kFlags =
    "-O3 -march=native --param vect-epilogues-nomask=0 -fno-predictive-commoning "
    "--param max-completely-peel-times=4 -fPIC -shared -nostdlib -std=gnu11 -fno-math-errno "
    "-fno-trapping-math -fwrapv -fno-strict-aliasing -fopenmp-simd -w";
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

std::string compiler_command() {
  if (in_process()) return jit::identity();
  const char* extra = std::getenv("LOOM_CFLAGS");  // appended: a later -O wins
  return compiler() + " " + kFlags + (extra && *extra ? std::string(" ") + extra : "");
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

std::shared_ptr<const CompiledKernel> compile_kernel(const std::string& source) {
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.by_source.find(source);
  if (it != c.by_source.end()) {
    metrics().cache_hits++;
    c.lru.splice(c.lru.begin(), c.lru, it->second.age);
    return it->second.kernel;
  }
  const bool jit = in_process();
  const std::string cmd = compiler_command();
  // The entry format is part of the key, so files of older formats are never looked at.
  const std::string key = source + "\n" + cmd + (jit ? "" : std::string(" ") + kLibs + "\n" +
                                                                compiler_version()) +
                          (jit ? "\nsealed-object-v1" : "\nsealed-v1");
  uint64_t h = fnv1a(key);
  const uint64_t key2 = checksum64(key.data(), key.size(), h);
  char name[32];
  std::snprintf(name, sizeof name, "k_%016llx", (unsigned long long)h);
  const std::string dir = cache_dir();
  make_dirs(dir);
  auto k = std::make_shared<CompiledKernel>();
  k->name = name;
  k->source_path = dir + "/" + name + ".c";
  const std::string out = dir + "/" + name + (jit ? ".o" : ".so");
  // Links the object (in-process route) or loads the library at `out`; false with the
  // reason in `error`.
  auto link = [&](const std::string& object, std::string* error) {
    if (jit) {
      void* fn = nullptr;
      k->module = jit::load(object, name, &fn, error);
      k->fn = reinterpret_cast<KernelFn>(fn);
      return k->module != nullptr;
    }
    k->lib = dlopen(out.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!k->lib) *error = dlerror();
    return k->lib != nullptr;
  };
  if (file_exists(out)) {
    const auto t0 = std::chrono::steady_clock::now();
    // NOTE [Sealed cache entries] (runtime/disk_cache.h): never load an unchecked file.
    // The source beside the object must be intact too: error messages and LOOM_DEBUG
    // point users at it.
    std::string object, error;
    if (file_holds(k->source_path, source) && read_sealed(out, key2, jit ? &object : nullptr) &&
        link(object, &error)) {
      metrics().disk_hits++;
      metrics().load_us += std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - t0)
                               .count();
    } else {
      metrics().disk_rejects++;
      if (debug_level() >= 2) std::fprintf(stderr, "loom: cache entry %s is damaged\n", name);
    }
  }
  if (!k->lib && !k->module) {
    // Written under temporary names and renamed, so a concurrent process never loads half
    // a file.
    if (!write_file(k->source_path, source))
      throw std::runtime_error("loom: cannot write kernel source " + k->source_path);
    const std::string tag = "." + std::to_string(getpid()) + ".tmp";
    bool ok = false;
    std::string log, object;
    auto t0 = std::chrono::steady_clock::now();
    if (jit) {
      static const std::string prelude =
          std::string(c_libc_decls()) + c_prelude() + c_math_prelude();
      jit::set_prelude(prelude, dir);
      ok = jit::compile(source, k->source_path, &object, &log);
      if (ok) {
        std::ofstream f(out + tag, std::ios::binary);
        f.write(object.data(), std::streamsize(object.size()));
        f.close();
        ok = bool(f);
        if (!ok) log = "cannot write " + out + tag;
      }
    } else {
      int status = 0;
      log = run_capture(cmd + " -o '" + out + tag + "' '" + k->source_path + "' " + kLibs, &status);
      ok = status == 0;
    }
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count();
    metrics().compile_us += us;
    if (debug_level() >= 2) std::fprintf(stderr, "loom: compiled %s in %.1f ms\n", name, us / 1e3);
    if (!ok) {
      std::remove((out + tag).c_str());
      throw std::runtime_error("loom: compiling kernel " + k->source_path + " failed (" +
                               (jit ? std::string("clang in process") : cmd) + "):\n" + log);
    }
    if (!seal_object(out + tag, key2)) {
      std::remove((out + tag).c_str());
      throw std::runtime_error("loom: cannot write kernel " + out + " compiled from " +
                               k->source_path);
    }
    std::rename((out + tag).c_str(), out.c_str());
    std::string error;
    if (!link(object, &error))
      throw std::runtime_error("loom: cannot load kernel " + out + " compiled from " +
                               k->source_path + ": " + error);
    metrics().kernels_compiled++;
  }
  if (k->lib) k->fn = reinterpret_cast<KernelFn>(dlsym(k->lib, "kernel"));
  if (!k->fn)
    throw std::runtime_error("loom: kernel " + k->source_path + " defines no `kernel` symbol");
  auto pos = c.by_source.emplace(source, Loaded{k, {}}).first;
  c.lru.push_front(&pos->first);
  pos->second.age = c.lru.begin();
  if (c.by_source.size() > max_loaded_kernels()) {
    auto victim = c.by_source.find(*c.lru.back());
    c.lru.pop_back();
    c.by_source.erase(victim);
    metrics().kernels_unloaded++;
  }
  return k;
}

}  // namespace loom
