#include "runtime/jit.h"

#ifdef LOOM_HAVE_JIT

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/Version.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Driver/Compilation.h>
#include <clang/Driver/Driver.h>
#include <clang/Driver/Job.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "runtime/disk_cache.h"

namespace loom {
namespace jit {

// NOTE [In-process compiler]: the system compiler costs a kernel 45-70 ms here, most of it
// fixed: starting cc1, as and ld, and parsing the prelude. Clang linked into the process
// compiles the same source to an object in memory in a third to a half of that, and ORC
// links the object in a fraction of a millisecond, where dlopen of a shared object takes
// longer. The flags are the external compiler's (NOTE [Kernel flags]) in clang's
// spelling, resolved once by clang's driver for this machine (-march=native); FMAs are
// formed only within one C expression (-ffp-contract=on: the prelude's formulas, written
// as the CPU's code that gcc contracts) and where the graph has one (MulAdd; NOTE [No
// contraction]), and 512-bit vectors are asked for where the machine has them: gcc used them
// for the reductions' 32-lane loops, and clang's 256-bit default made the softmax and
// layer-norm kernels 20-40% slower. Library calls stay scalar calls into libm, as with
// gcc, so both compilers call the same functions. Every kernel links into a JITDylib of
// its own, so that each may define `kernel` and be unlinked alone; their undefined symbols
// (libm, and libgcc's helpers that -lgcc supplies to the external route) resolve in the
// process.

namespace {

const char* kPlaceholder = "loom_kernel.c";

struct State {
  // clang -cc1 arguments, optimized and quick (NOTE [Compile tiers], runtime/compiler.cpp);
  // kPlaceholder is the input.
  std::vector<std::string> cc1[2];
  std::string identity[2];
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  llvm::orc::JITDylib* runtime = nullptr;  // resolves libm and libgcc symbols
  std::string error;                       // why setup failed, if it did
  std::atomic<uint64_t> next{0};
};

std::vector<std::string> driver_cc1_args(bool quick, std::string* error) {
  std::vector<const char*> argv = {"clang",
                                   "-c",
                                   "-O3",
                                   "-march=native",
                                   "-std=gnu11",
                                   "-fno-math-errno",
                                   "-fno-trapping-math",
                                   "-fwrapv",
                                   "-fno-strict-aliasing",
                                   "-fopenmp-simd",
                                   "-ffp-contract=on",
                                   "-mprefer-vector-width=512",
                                   "-fPIC",
                                   "-fno-asynchronous-unwind-tables",
                                   "-nostdinc",
                                   "-w"};
  // LOOM_CFLAGS is appended here as to the external compiler's command: a later -O wins.
  const char* extra = std::getenv("LOOM_CFLAGS");
  std::vector<std::string> words;
  std::istringstream split(extra ? extra : "");
  for (std::string w; split >> w;) words.push_back(w);
  for (const auto& w : words) argv.push_back(w.c_str());
  if (quick) argv.push_back("-O0");
  for (const char* a : {kPlaceholder, "-o", "loom_kernel.o"}) argv.push_back(a);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> opts = new clang::DiagnosticOptions();
  std::string log;
  llvm::raw_string_ostream os(log);
  auto* printer = new clang::TextDiagnosticPrinter(os, &*opts);
  clang::DiagnosticsEngine diags(new clang::DiagnosticIDs(), &*opts, printer);
  clang::driver::Driver driver("clang", llvm::sys::getDefaultTargetTriple(), diags);
  driver.setCheckInputsExist(false);
  std::unique_ptr<clang::driver::Compilation> c(driver.BuildCompilation(argv));
  std::vector<std::string> out;
  if (!c || c->getJobs().size() != 1 || !llvm::isa<clang::driver::Command>(*c->getJobs().begin())) {
    *error = "clang's driver made no single compile job: " + os.str();
    return out;
  }
  const auto& cmd = llvm::cast<clang::driver::Command>(*c->getJobs().begin());
  const auto& args = cmd.getArguments();
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef a(args[i]);
    // Not into the key: the directory the process runs in. Not wanted: leaking the
    // compiler's memory as a short-lived cc1 does, and options for LLVM's global state.
    if (a.startswith("-fcoverage-compilation-dir") || a.startswith("-fdebug-compilation-dir") ||
        a == "-disable-free")
      continue;
    if (a == "-mllvm") {
      ++i;
      continue;
    }
    out.push_back(args[i]);
  }
  return out;
}

State& state() {
  static State* s = [] {
    auto* st = new State();  // leaked: linked kernels live until exit
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    for (int quick = 0; quick < 2; ++quick) {
      st->cc1[quick] = driver_cc1_args(quick, &st->error);
      if (st->cc1[quick].empty()) return st;
      st->identity[quick] = std::string("clang ") + CLANG_VERSION_STRING + " in process:";
      for (const auto& a : st->cc1[quick]) st->identity[quick] += " " + a;
    }
    auto lljit = llvm::orc::LLJITBuilder().create();
    if (!lljit) {
      st->error = llvm::toString(lljit.takeError());
      return st;
    }
    st->lljit = std::move(*lljit);
    auto& es = st->lljit->getExecutionSession();
    auto rt = es.createJITDylib("loom_runtime");
    if (!rt) {
      st->error = llvm::toString(rt.takeError());
      return st;
    }
    st->runtime = &*rt;
    const char prefix = st->lljit->getDataLayout().getGlobalPrefix();
    for (const char* lib : {"libm.so.6", "libgcc_s.so.1"}) {
      auto g = llvm::orc::DynamicLibrarySearchGenerator::Load(lib, prefix);
      if (g)
        st->runtime->addGenerator(std::move(*g));
      else
        llvm::consumeError(g.takeError());
    }
    auto self = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
    if (self)
      st->runtime->addGenerator(std::move(*self));
    else
      llvm::consumeError(self.takeError());
    return st;
  }();
  return *s;
}

// LOOM_PERF_MAP=1: linked kernels are named in /tmp/perf-<pid>.map, where perf looks up
// code that no file holds (a kernel from the system compiler is named by its library).
void note_for_perf(const std::string& object, const std::string& name, void* address) {
  static const bool on = [] {
    const char* v = std::getenv("LOOM_PERF_MAP");
    return v && *v && std::string(v) != "0";
  }();
  if (!on) return;
  auto file = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(object), name));
  if (!file) {
    llvm::consumeError(file.takeError());
    return;
  }
  uint64_t size = 0;
  for (const llvm::object::SymbolRef& sym : (*file)->symbols()) {
    auto sym_name = sym.getName();
    if (sym_name && *sym_name == "kernel")
      size = llvm::object::ELFSymbolRef(sym).getSize();
    else if (!sym_name)
      llvm::consumeError(sym_name.takeError());
  }
  static std::mutex mu;
  std::lock_guard<std::mutex> g(mu);
  if (FILE* f = std::fopen(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str(), "a")) {
    std::fprintf(f, "%llx %llx %s\n", (unsigned long long)reinterpret_cast<uintptr_t>(address),
                 (unsigned long long)size, name.c_str());
    std::fclose(f);
  }
}

}  // namespace

class Module {
 public:
  llvm::orc::JITDylib* dylib = nullptr;
};

bool available() {
  State& s = state();
  return s.lljit && s.runtime;
}

const std::string& identity(bool quick) { return state().identity[quick]; }

namespace {

// An invocation from clang's cc1 arguments with `input` for the kernel's file, and a
// diagnostics engine that takes its warning options (-w) from it.
bool make_invocation(clang::CompilerInstance& ci, const std::vector<std::string>& cc1,
                     const std::string& input, llvm::raw_ostream& diag_os) {
  std::vector<const char*> args;
  for (const auto& a : cc1) args.push_back(a == kPlaceholder ? input.c_str() : a.c_str());
  {
    auto* printer = new clang::TextDiagnosticPrinter(diag_os, new clang::DiagnosticOptions());
    clang::DiagnosticsEngine parse(new clang::DiagnosticIDs(), new clang::DiagnosticOptions(),
                                   printer);
    if (!clang::CompilerInvocation::CreateFromArgs(ci.getInvocation(), args, parse)) return false;
  }
  ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_os, &ci.getDiagnosticOpts()),
                       /*ShouldOwnClient=*/true);
  return true;
}

// NOTE [Precompiled prelude]: every kernel's source begins with the same prelude (types,
// libm declarations, Loom's math), and parsing it was about 8 of a small kernel's 25-30
// ms. It is precompiled once, with the kernels' own arguments, into the cache directory
// (prelude_<hash>.h beside its .pch; the hash covers the text and the compiler's
// identity), and a kernel's compile reads it from there and parses only what follows.
// The objects made are the same bytes either way (20 kernels compared). Compiler time
// per new tiny kernel: 20.6-29.5 -> 18.6-24.3 ms. If the precompiled file cannot be
// made, or a compile with it fails, the whole source is compiled as before, so a
// kernel's errors are reported with its own line numbers.
struct Prelude {
  std::mutex mu;
  std::string text, dir;
  std::string pch[2];  // the precompiled files, once made, for either tier
  bool failed = false;
};

Prelude& prelude() {
  static Prelude* p = new Prelude();  // leaked, as the state
  return *p;
}

// The precompiled prelude's path, made on first use; empty when there is none.
std::string prelude_pch(const State& s, bool quick, std::string* text) {
  Prelude& p = prelude();
  std::lock_guard<std::mutex> g(p.mu);
  if (p.text.empty() || p.failed) return "";
  *text = p.text;
  if (!p.pch[quick].empty()) return p.pch[quick];
  const std::string key = s.identity[quick] + "\n" + p.text;
  char name[48];
  std::snprintf(name, sizeof name, "prelude_%016llx",
                (unsigned long long)checksum64(key.data(), key.size()));
  const std::string header = p.dir + "/" + name + ".h", pch = p.dir + "/" + name + ".pch";
  if (!file_exists(pch) || !file_exists(header)) {
    // The header keeps the name the precompiled file records.
    if (!file_exists(header) && !write_file(header, p.text)) {
      p.failed = true;
      return "";
    }
    const std::string tmp = pch + "." + std::to_string(getpid()) + ".tmp";
    std::vector<std::string> cc1;
    const std::vector<std::string>& args = s.cc1[quick];
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "-emit-obj") {
        cc1.push_back("-emit-pch");
      } else if ((a == "-x" || a == "-o") && i + 1 < args.size()) {
        cc1.push_back(a);
        cc1.push_back(a == "-x" ? "c-header" : tmp);
        ++i;
      } else {
        cc1.push_back(a);
      }
    }
    clang::CompilerInstance ci;
    std::string log;
    llvm::raw_string_ostream diag_os(log);
    clang::GeneratePCHAction action;
    const bool ok = make_invocation(ci, cc1, header, diag_os) && ci.ExecuteAction(action) &&
                    !ci.getDiagnostics().hasErrorOccurred() &&
                    std::rename(tmp.c_str(), pch.c_str()) == 0;
    if (!ok) {
      p.failed = true;
      return "";
    }
  }
  p.pch[quick] = pch;
  return pch;
}

}  // namespace

void set_prelude(const std::string& text, const std::string& dir) {
  Prelude& p = prelude();
  std::lock_guard<std::mutex> g(p.mu);
  if (p.text == text && p.dir == dir) return;
  p.text = text;
  p.dir = dir;
  p.pch[0].clear();
  p.pch[1].clear();
  p.failed = false;
}

bool compile(const std::string& source, const std::string& path, bool quick, std::string* object,
             std::string* log) {
  State& s = state();
  if (!available()) {
    *log = "the in-process compiler could not start: " + s.error;
    return false;
  }
  std::string text;
  std::string pch = prelude_pch(s, quick, &text);
  if (source.compare(0, text.size(), text) != 0) pch.clear();
  bool retried = false;
  for (;;) {
    log->clear();
    clang::CompilerInstance ci;
    llvm::raw_string_ostream diag_os(*log);
    if (!make_invocation(ci, s.cc1[quick], path, diag_os)) return false;
    // The source comes from memory: what is on disk is for people to read.
    std::string body = pch.empty() ? source : source.substr(text.size());
    if (!pch.empty()) {
      ci.getPreprocessorOpts().ImplicitPCHInclude = pch;
      // Its name says what it holds; the header beside it may be rewritten by another
      // process with the same text.
      ci.getPreprocessorOpts().DisablePCHOrModuleValidation =
          clang::DisableValidationForModuleKind::All;
    }
    ci.getPreprocessorOpts().addRemappedFile(
        path, llvm::MemoryBuffer::getMemBufferCopy(body, path).release());
    ci.getPreprocessorOpts().RetainRemappedFileBuffers = false;
    llvm::SmallVector<char, 0> bytes;
    ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(bytes));
    clang::EmitObjAction action;
    const bool ok = ci.ExecuteAction(action) && !ci.getDiagnostics().hasErrorOccurred();
    diag_os.flush();
    if (ok) {
      object->assign(bytes.data(), bytes.size());
      if (retried) {  // the whole source compiles where the prelude's file did not
        Prelude& p = prelude();
        std::lock_guard<std::mutex> g(p.mu);
        p.failed = true;
      }
      return true;
    }
    if (pch.empty()) return false;
    pch.clear();  // again from the whole source
    retried = true;
  }
}

Module* load(const std::string& object, const std::string& name, void** kernel,
             std::string* error) {
  State& s = state();
  if (!available()) {
    *error = "the in-process compiler could not start: " + s.error;
    return nullptr;
  }
  auto& es = s.lljit->getExecutionSession();
  // A kernel unloaded and loaded again gets a new JITDylib name.
  auto jd = es.createJITDylib(name + "." + std::to_string(s.next++));
  if (!jd) {
    *error = llvm::toString(jd.takeError());
    return nullptr;
  }
  jd->addToLinkOrder(*s.runtime);
  auto m = std::make_unique<Module>();
  m->dylib = &*jd;
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, name);
  if (llvm::Error e = s.lljit->addObjectFile(*jd, std::move(buffer))) {
    *error = llvm::toString(std::move(e));
    unload(m.release());
    return nullptr;
  }
  auto sym = s.lljit->lookup(*jd, "kernel");
  if (!sym) {
    *error = llvm::toString(sym.takeError());
    unload(m.release());
    return nullptr;
  }
  *kernel = sym->toPtr<void*>();
  note_for_perf(object, name, *kernel);
  return m.release();
}

void unload(Module* m) {
  if (!m) return;
  State& s = state();
  if (llvm::Error e = s.lljit->getExecutionSession().removeJITDylib(*m->dylib))
    llvm::consumeError(std::move(e));
  delete m;
}

}  // namespace jit
}  // namespace loom

#else  // no LLVM: the system compiler does all the work

namespace loom {
namespace jit {

class Module {};

bool available() { return false; }

const std::string& identity(bool) {
  static const std::string none;
  return none;
}

void set_prelude(const std::string&, const std::string&) {}

bool compile(const std::string&, const std::string&, bool, std::string*, std::string* log) {
  *log = "loom was built without LLVM and clang";
  return false;
}

Module* load(const std::string&, const std::string&, void**, std::string* error) {
  *error = "loom was built without LLVM and clang";
  return nullptr;
}

void unload(Module*) {}

}  // namespace jit
}  // namespace loom

#endif
