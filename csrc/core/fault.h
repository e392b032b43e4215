// Faults found while a kernel runs (an index out of range): the kernel stops early and
// reports which check failed and the bad value; realization turns that into KernelFault.
#pragma once

#include <stdexcept>
#include <string>

namespace loom {

enum class FaultKind { Index, Runtime };  // Python's IndexError vs RuntimeError

// Registers a message template ("{}" stands for the offending value) and returns its id;
// equal templates share an id.
int fault_message(FaultKind kind, const std::string& templ);

struct KernelFault : std::runtime_error {
  KernelFault(FaultKind k, const std::string& what) : std::runtime_error(what), kind(k) {}
  FaultKind kind;
};

// Throws the KernelFault for message `msg` and offending value `value`.
[[noreturn]] void raise_fault(int msg, int64_t value);

}  // namespace loom
