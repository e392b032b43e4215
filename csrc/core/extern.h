// Extern kernels: hand-written functions (a BLAS call, a sort) run by the scheduler on
// realized inputs, as one step of a realization like any generated kernel.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/memory.h"
#include "core/node.h"

namespace loom {

// An input as the function sees it: realized memory read through a view.
struct ExternInput {
  std::shared_ptr<Memory> mem;
  View view;
  DType dtype;
};

// NOTE [Extern calls]: one call of an extern function, shared by the Extern nodes of its
// outputs (sort has two). The inputs are the nodes' sources, shaped values of any kind;
// the scheduler computes each into memory (unless it already is a load of realized memory
// in a layout `accepts` takes), runs `fn` once, and hands output k to node k.
struct ExternCall {
  std::string name;
  std::function<void(const std::vector<ExternInput>& in,
                     const std::vector<std::shared_ptr<Memory>>& out)>
      fn;
  std::function<bool(size_t input, const View& view)> accepts;
  std::vector<int64_t> out_nbytes;
  std::vector<std::shared_ptr<Memory>> results;  // filled by the run, taken by the nodes
  bool done = false;
};

struct ExternArg {
  std::shared_ptr<ExternCall> call;
  int out;
  bool operator==(const ExternArg& o) const { return call == o.call && out == o.out; }
};

// The flat values (one per output, of out_nbytes bytes) of a call on `inputs`.
std::vector<NodeRef> extern_call(std::shared_ptr<ExternCall> call, std::vector<NodeRef> inputs);

}  // namespace loom
