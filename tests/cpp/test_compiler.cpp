// The kernel compiler: in the process (NOTE [In-process compiler]) and through a command.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/metrics.h"
#include "runtime/compiler.h"
#include "runtime/jit.h"

namespace loom {
namespace {

// A kernel that writes i * scale + tag into floats [start, end) of its first buffer.
std::string scale_kernel(float scale, int tag) {
  return "typedef __INT64_TYPE__ int64_t;\n"
         "void kernel(char** bufs, int64_t start, int64_t end) {\n"
         "  float* out = (float*)bufs[0];\n"
         "  for (int64_t i = start; i < end; ++i) out[i] = (float)i * " +
         std::to_string(scale) + "f + " + std::to_string(tag) + ";\n}\n";
}

void expect_runs(const CompiledKernel& k, float scale, int tag) {
  float out[16] = {};
  char* bufs[] = {reinterpret_cast<char*>(out)};
  k.fn(bufs, 2, 16);
  EXPECT_EQ(out[1], 0.0f);
  for (int i = 2; i < 16; ++i) EXPECT_EQ(out[i], float(i) * scale + float(tag));
}

TEST(Compiler, InProcessWhereBuilt) {
#ifdef LOOM_HAVE_JIT
  ASSERT_TRUE(jit::available());
  EXPECT_EQ(compiler_command().rfind("clang ", 0), 0u) << compiler_command();
#else
  EXPECT_FALSE(jit::available());
#endif
}

TEST(Compiler, CompilesRunsAndCaches) {
  const int64_t before = metrics().kernels_compiled, hits = metrics().cache_hits;
  auto a = compile_kernel(scale_kernel(2.5f, 7001));
  expect_runs(*a, 2.5f, 7001);
  auto b = compile_kernel(scale_kernel(2.5f, 7001));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(metrics().cache_hits, hits + 1);
  // The same text may have been compiled by an earlier run into this cache directory.
  EXPECT_LE(metrics().kernels_compiled, before + 1);
}

TEST(Compiler, KernelsOfTheSameSymbolStayApart) {
  // Every kernel defines `kernel`: each links on its own (a JITDylib or a library each).
  auto a = compile_kernel(scale_kernel(1.0f, 7101));
  auto b = compile_kernel(scale_kernel(3.0f, 7102));
  ASSERT_NE(a->fn, b->fn);
  expect_runs(*a, 1.0f, 7101);
  expect_runs(*b, 3.0f, 7102);
}

TEST(Compiler, BrokenSourceRaisesNamingTheFile) {
  for (const char* cc : {"", "cc"}) {
    if (*cc) setenv("LOOM_CC", cc, 1);
    try {
      compile_kernel(std::string("void kernel(char** b, long s, long e) { this is not C; }\n/* ") +
                     cc + " */\n");
      ADD_FAILURE() << "expected a compile error";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("loom: compiling kernel "), std::string::npos) << what;
      EXPECT_NE(what.find(".c failed"), std::string::npos) << what;
      EXPECT_NE(what.find("error"), std::string::npos) << what;  // the compiler's message
    }
    unsetenv("LOOM_CC");
  }
}

TEST(Compiler, PrecompiledPrelude) {
#ifdef LOOM_HAVE_JIT
  // NOTE [Precompiled prelude]: the source's prelude comes from the precompiled file.
  char tmpl[] = "/tmp/loom_pch_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string prelude =
      "typedef __INT64_TYPE__ int64_t;\n"
      "static inline float loom_twice(float x) { return 2 * x; }\n";
  jit::set_prelude(prelude, dir);
  const std::string body =
      "void kernel(char** bufs, int64_t start, int64_t end) {\n"
      "  float* out = (float*)bufs[0];\n"
      "  for (int64_t i = start; i < end; ++i) out[i] = loom_twice((float)i);\n}\n";
  // Each tier (NOTE [Compile tiers]) precompiles the prelude with its own arguments.
  for (bool quick : {false, true}) {
    std::string object, log;
    ASSERT_TRUE(jit::compile(prelude + body, dir + "/k.c", quick, &object, &log)) << log;
    int pch = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      pch += e.path().extension() == ".pch";
    EXPECT_EQ(pch, quick ? 2 : 1);
    void* fn = nullptr;
    std::string error;
    jit::Module* m = jit::load(object, quick ? "pch_quick" : "pch_test", &fn, &error);
    ASSERT_NE(m, nullptr) << error;
    float out[8] = {};
    char* bufs[] = {reinterpret_cast<char*>(out)};
    reinterpret_cast<void (*)(char**, int64_t, int64_t)>(fn)(bufs, 0, 8);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 2.0f * float(i));
    jit::unload(m);
  }
  std::string object, log;
  // An error after the prelude: the whole source is compiled again, so the message has
  // the kernel's own line.
  EXPECT_FALSE(jit::compile(prelude + "void kernel(char** b, long s, long e) { not C; }\n",
                            dir + "/bad.c", false, &object, &log));
  EXPECT_NE(log.find("bad.c:3:"), std::string::npos) << log;
  std::filesystem::remove_all(dir);
#endif
}

TEST(Compiler, ExternalCompilerWhenNamed) {
  setenv("LOOM_CC", "cc", 1);
  EXPECT_EQ(compiler_command().rfind("cc ", 0), 0u) << compiler_command();
  auto k = compile_kernel(scale_kernel(0.5f, 7201));
  expect_runs(*k, 0.5f, 7201);
  unsetenv("LOOM_CC");
}

}  // namespace
}  // namespace loom
