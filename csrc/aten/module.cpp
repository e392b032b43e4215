// The Python module _loom. Loading it registers the allocator, device guard and kernels
// (static initializers in this library); these functions are the rest of the Python API.
#include <ATen/ATen.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>
// Storage.h relies on utils/pybind.h for c10 and TORCH_PYTHON_API.
#include <torch/csrc/Storage.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "aten/tensor_util.h"
#include "aten/torch_compat.h"
#include "codegen/ops_c.h"
#include "core/memory.h"
#include "core/metrics.h"
#include "core/fault.h"
#include "runtime/conv.h"
#include "runtime/disk_cache.h"
#include "schedule/realize.h"

namespace py = pybind11;

namespace loom::aten {
namespace {

struct MetricsSnapshot {
  std::vector<std::pair<const char*, int64_t>> counters;
  std::map<std::string, int64_t> fallbacks;
};

MetricsSnapshot snapshot() {
  EngineLock g(engine_mutex());
  Metrics& m = metrics();
  MemoryStats mem = memory_stats();
  BufferStats bufs = buffer_stats();
  MetricsSnapshot s;
  s.counters = {
      {"kernels_run", m.kernels_run.load()},
      {"kernels_compiled", m.kernels_compiled.load()},
      {"kernels_optimized", m.kernels_optimized.load()},
      {"compile_us", m.compile_us.load()},
      {"load_us", m.load_us.load()},
      {"cache_hits", m.cache_hits.load()},
      {"plan_hits", m.plan_hits.load()},
      {"cohort_stores", m.cohort_stores.load()},
      {"sibling_stores", m.sibling_stores.load()},
      {"donated_stores", m.donated_stores.load()},
      {"superseded_bases", m.superseded_bases.load()},
      {"reductions_recomputed", m.reductions_recomputed.load()},
      {"ordered_scatters", m.ordered_scatters.load()},
      {"host_waits", m.host_waits.load()},
      {"host_wait_us", m.host_wait_us.load()},
      {"disk_hits", m.disk_hits.load()},
      {"disk_rejects", m.disk_rejects.load()},
      {"kernels_unloaded", m.kernels_unloaded.load()},
      {"realizations", m.realizations.load()},
      {"extern_calls", m.extern_calls.load()},
      {"buffers_allocated", m.buffers_allocated.load()},
      {"bytes_allocated", m.bytes_allocated.load()},
      {"live_nodes", int64_t(live_node_count())},
      {"live_buffers", bufs.count},  // storages, realized or pending
      {"live_buffer_bytes", bufs.bytes},
      {"live_blocks", mem.live_blocks},
      {"live_bytes", mem.live_bytes},
      {"cached_bytes", mem.cached_bytes},
      {"peak_bytes", mem.peak_bytes},
  };
  std::lock_guard<std::mutex> fg(m.mu);
  s.fallbacks = m.fallbacks;
  return s;
}

py::dict metrics_dict() {
  MetricsSnapshot s;
  {
    py::gil_scoped_release no_gil;
    s = snapshot();
  }
  py::dict d;
  for (const auto& [name, value] : s.counters) d[name] = value;
  py::dict fallbacks;
  for (const auto& [name, count] : s.fallbacks) fallbacks[py::str(name)] = count;
  d["fallbacks"] = fallbacks;
  return d;
}

// torch 1.13's Python layer cannot turn a PrivateUse1 storage object into a c10::Storage
// ("Invalid device for storage"), so Tensor.set_(storage, ...) never reaches the
// dispatcher; the package routes it here instead (python/loom/__init__.py).
void set_storage(at::Tensor self, py::handle storage, c10::optional<int64_t> storage_offset,
                 c10::optional<std::vector<int64_t>> size, std::vector<int64_t> stride) {
#if LOOM_TORCH_AT_LEAST(2, 0)
  TORCH_CHECK_TYPE(THPStorage_Check(storage.ptr()),
                   "_set_storage: expected a torch.UntypedStorage");
  c10::Storage source = THPStorage_Unpack(storage.ptr());
#else
  TORCH_CHECK_TYPE(PyObject_IsInstance(storage.ptr(), THPStorageClass) == 1,
                   "_set_storage: expected a torch.UntypedStorage");
  c10::Storage source(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(
      reinterpret_cast<THPStorage*>(storage.ptr())->cdata));
#endif
  if (storage_offset.has_value()) {
    TORCH_CHECK_TYPE(size.has_value(), "set_: a storage offset needs a size");
    self.set_(source, *storage_offset, *size, stride);
  } else {
    self.set_(source);
  }
}

void print_metrics_at_exit() {
  MetricsSnapshot s = snapshot();
  std::fprintf(stderr, "loom metrics:\n");
  for (const auto& [name, value] : s.counters) {
    std::fprintf(stderr, "  %-18s %lld\n", name, static_cast<long long>(value));
  }
  for (const auto& [name, count] : s.fallbacks) {
    std::fprintf(stderr, "  fallback %-40s %lld\n", name.c_str(), static_cast<long long>(count));
  }
}

}  // namespace
}  // namespace loom::aten

PYBIND11_MODULE(_loom, m) {
  using namespace loom::aten;
  m.doc() = "Loom: a lazy PyTorch device";
  {
    // A complex value converts to bool as the running torch converts it: by its real part
    // (1.13) or by both parts (2.x). (The CPU's conversion warns that it drops a part.)
    static QuietWarnings quiet;
    WarningHandlerGuard guard(&quiet);
    const at::Tensor i = at::scalar_tensor(c10::complex<double>(0, 1), at::kComplexDouble);
    loom::set_complex_to_bool_by_both_parts(i.to(at::kBool).item<bool>());
  }
  {
    // Complex quotients as the running torch's c10::complex divides (its CPU kernels' scalar
    // form, and CUDA's): 2.x scales (1 / 0 is inf), 1.13 does not (NaN). Magnitudes as its
    // vectorized abs takes them: 1.13's squares overflow (|1e30 + 1e30i| is inf), 2.x's
    // hypot does not.
    loom::ComplexForms forms;
    forms.scaled_division =
        std::isinf((c10::complex<float>(1, 0) / c10::complex<float>(0, 0)).real());
    const at::Tensor big = at::full({64}, c10::complex<float>(1e30f, 1e30f));
    forms.hypot_abs = at::abs(big).isfinite().all().item<bool>();
    loom::set_complex_forms(forms);
  }
  m.def(
      "sync",
      [] {
        try {
          loom::realize_all();
        } catch (const loom::KernelFault& f) {
          if (f.kind == loom::FaultKind::Index) throw py::index_error(f.what());
          throw std::runtime_error(f.what());
        }
      },
      py::call_guard<py::gil_scoped_release>(),
      "Computes every live storage's pending value; returns when all of it is done.");
  m.def("metrics", &metrics_dict, "Engine counters, fallbacks per op and memory statistics.");
  m.def(
      "reset_metrics", [] { loom::metrics().reset(); }, "Zeroes the counters and fallbacks.");
  m.def("_debug_level", &loom::debug_level, "LOOM_DEBUG as read at start-up.");
  m.def(
      "_conv_library",
      [](py::object enable) {
        bool was = loom::conv_library_available();
        if (!enable.is_none()) loom::set_conv_library(enable.cast<bool>());
        return was;
      },
      py::arg("enable") = py::none(),
      "Whether float32 convolutions run on oneDNN; with an argument, turns it on or off "
      "(on needs a build with oneDNN). Returns the previous setting.");
  m.def(
      "_sweep_cache",
      [](const std::string& dir, int64_t max_bytes) {
        loom::SweepResult r = loom::sweep_cache(dir, max_bytes);
        return py::make_tuple(r.removed, r.bytes_before, r.bytes_after);
      },
      py::arg("dir"), py::arg("max_bytes"),
      "Evicts the least recently used kernel cache entries of `dir` beyond `max_bytes` "
      "(NOTE [Cache size]); returns (entries removed, entry bytes before, after).");
  m.def("_set_storage", &set_storage, py::arg("self"), py::arg("storage"),
        py::arg("storage_offset") = py::none(), py::arg("size") = py::none(),
        py::arg("stride") = std::vector<int64_t>{},
        "Tensor.set_ with a Loom storage, which torch 1.13's Python binding rejects.");

  if (loom::debug_level() >= 1) {
    // Touching the singletons first makes them outlive the handler: exit() runs atexit
    // handlers and static destructors in reverse order of registration.
    snapshot();
    std::atexit(&print_metrics_at_exit);
  }
}
