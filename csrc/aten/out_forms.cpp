// The out= forms of ops whose functional form has a Loom kernel (padding, interpolation,
// pooling), run through that kernel instead of the CPU fallback.
//
// NOTE [Out forms by their functional op]: `name.out(args..., *, out...)` (or `.grad_input`,
// `.output`) runs the functional overload `name` on Loom, which makes the CPU's checks of the
// inputs, and stores its results into the outs, lazily like any write. Before the store each
// out gets what the CPU's kernel does to it: a structured kernel's set_output (the out's dtype
// must be the result's, "Expected out tensor to have dtype ..."; resize_output; a resized out
// takes the result's strides), an unstructured one resize_output and the dtype check it makes.
// Not the meta kernel: torch 2.x replaced many by Python functions that skip the out checks.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <set>
#include <string>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

bool is_out(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

// The ops of the list below with no structured CPU kernel (the same in torch 1.13 and 2.6).
const std::set<std::string>& unstructured_ops() {
  static const std::set<std::string> ops = {"aten::reflection_pad2d",
                                            "aten::reflection_pad2d_backward",
                                            "aten::replication_pad2d_backward",
                                            "aten::replication_pad3d_backward",
                                            "aten::max_pool3d_with_indices",
                                            "aten::max_pool3d_with_indices_backward",
                                            "aten::adaptive_avg_pool2d",
                                            "aten::adaptive_avg_pool3d",
                                            "aten::adaptive_avg_pool3d_backward",
                                            "aten::fractional_max_pool3d_backward"};
  return ops;
}

void out_by_functional(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  std::vector<c10::IValue> args(stack->end() - int64_t(n), stack->end());
  std::vector<size_t> outs;
  for (size_t i = 0; i < n; ++i)
    if (is_out(schema.arguments()[i])) outs.push_back(i);
  for (const c10::IValue& v : args)
    if (v.isTensor() && v.toTensor().defined())
      check_operands(schema.name().c_str(), {v.toTensor()});

  // adaptive_avg_pool3d_backward's functional form is _adaptive_avg_pool3d_backward.
  auto functional = c10::Dispatcher::singleton().findSchema({schema.name(), ""});
  if (!functional.has_value())
    functional = c10::Dispatcher::singleton().findSchema({"aten::_" + schema.name().substr(6), ""});
  TORCH_INTERNAL_ASSERT(functional.has_value(), "no functional form of ", schema.name());
  torch::jit::Stack fs;
  for (size_t i = 0; i < n; ++i)
    if (!is_out(schema.arguments()[i])) fs.push_back(args[i]);
  functional->callBoxed(&fs);
  TORCH_INTERNAL_ASSERT(fs.size() == outs.size(), schema.name(), ": ", fs.size(), " results for ",
                        outs.size(), " outputs");

  const bool structured = !unstructured_ops().count(schema.name());
  for (size_t k = 0; k < outs.size(); ++k) {
    at::Tensor out = args[outs[k]].toTensor();
    const at::Tensor r = fs[k].toTensor();
    if (structured) {
      // The structured kernel's set_output for an out (resize_out in RegisterCPU.cpp).
      TORCH_CHECK(out.scalar_type() == r.scalar_type(), "Expected out tensor to have dtype ",
                  r.dtype(), ", but got ", out.dtype(), " instead");
      if (at::native::resize_output(out, r.sizes()) && out.strides() != r.strides())
        out.as_strided_(r.sizes(), r.strides());
    } else {
      // The CPU's unstructured kernels: adaptive average pooling checks the dtype itself;
      // the others find it when they take the out's data pointer.
      if (schema.name() == "aten::adaptive_avg_pool2d" ||
          schema.name() == "aten::adaptive_avg_pool3d") {
        TORCH_CHECK(out.scalar_type() == r.scalar_type(), "expected dtype ", r.dtype(),
                    " for `output` but got dtype ", out.dtype());
      }
      TORCH_CHECK(out.scalar_type() == r.scalar_type(), "expected scalar type ", r.scalar_type(),
                  " but found ", out.scalar_type());
      at::native::resize_output(out, r.sizes());
    }
    EngineLock lock(engine_mutex());
    if (out.numel() > 0) assign(out, read_tensor(r));
  }
  torch::jit::drop(*stack, n);
  for (size_t p : outs) stack->push_back(args[p]);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name :
       {// interpolation
        "upsample_nearest1d.out", "upsample_nearest2d.out", "upsample_nearest3d.out",
        "_upsample_nearest_exact1d.out", "_upsample_nearest_exact2d.out",
        "_upsample_nearest_exact3d.out", "upsample_linear1d.out", "upsample_bilinear2d.out",
        "upsample_trilinear3d.out", "upsample_bicubic2d.out", "_upsample_bilinear2d_aa.out",
        "_upsample_bicubic2d_aa.out", "upsample_nearest1d_backward.grad_input",
        "upsample_nearest2d_backward.grad_input", "upsample_nearest3d_backward.grad_input",
        "_upsample_nearest_exact1d_backward.grad_input",
        "_upsample_nearest_exact2d_backward.grad_input",
        "_upsample_nearest_exact3d_backward.grad_input", "upsample_linear1d_backward.grad_input",
        "upsample_bilinear2d_backward.grad_input", "upsample_trilinear3d_backward.grad_input",
        "upsample_bicubic2d_backward.grad_input", "_upsample_bilinear2d_aa_backward.grad_input",
        "_upsample_bicubic2d_aa_backward.grad_input",
        // padding
        "reflection_pad1d.out", "reflection_pad2d.out", "reflection_pad3d.out",
        "replication_pad1d.out", "replication_pad2d.out", "replication_pad3d.out",
        "reflection_pad1d_backward.grad_input", "reflection_pad2d_backward.grad_input",
        "reflection_pad3d_backward.grad_input", "replication_pad1d_backward.grad_input",
        "replication_pad2d_backward.grad_input", "replication_pad3d_backward.grad_input",
        // pooling
        "max_pool2d_with_indices.out", "max_pool3d_with_indices.out", "avg_pool2d.out",
        "avg_pool3d.out", "adaptive_avg_pool2d.out", "adaptive_avg_pool3d.out",
        "adaptive_max_pool2d.out", "adaptive_max_pool3d.out",
        "max_pool2d_with_indices_backward.grad_input",
        "max_pool3d_with_indices_backward.grad_input", "avg_pool2d_backward.grad_input",
        "avg_pool3d_backward.grad_input", "adaptive_avg_pool3d_backward.grad_input",
        "adaptive_max_pool2d_backward.grad_input", "adaptive_max_pool3d_backward.grad_input",
        "fractional_max_pool2d_backward.grad_input", "fractional_max_pool3d_backward.grad_input"})
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&out_by_functional>());
}

}  // namespace loom::aten
