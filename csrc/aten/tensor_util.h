// The bridge between at::Tensor and the engine: a Loom tensor is a strided view over a
// storage whose DataPtr context is a Buffer.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include <vector>

#include "core/fault.h"
#include "core/graph.h"

namespace loom::aten {

constexpr c10::DeviceType kLoomDeviceType = c10::DeviceType::PrivateUse1;
constexpr c10::DispatchKey kLoomDispatchKey = c10::DispatchKey::PrivateUse1;

// The allocator of every Loom storage (allocator.cpp).
c10::Allocator* loom_allocator();
// Gives a resizable storage fresh memory of nbytes whose first min(old, new) bytes keep their
// value, lazily, as a CPU storage's resize_ keeps them (views.cpp).
void resize_storage_bytes(const c10::Storage& storage, size_t nbytes);
// True when `ptr` was made by loom_allocator(), i.e. its context is a Buffer.
bool is_loom_data_ptr(const c10::DataPtr& ptr);

bool is_loom(const at::Tensor& t);
Buffer& buffer_of(const at::Tensor& t);

// Throws TypeError for dtypes the engine has no kernels for (quantized...).
DType to_loom(c10::ScalarType t);
c10::ScalarType to_aten(DType t);

View view_of(const at::Tensor& t);
Shape shape_of(c10::IntArrayRef sizes);

// The first nbytes of dst's value become src's, lazily (storage copies and resizes).
void copy_bytes(Buffer& dst, const Buffer& src, int64_t nbytes);

// A lazy strided load of t's storage value.
NodeRef read_tensor(const at::Tensor& t);
// Stores `value` (already of dst's shape and dtype) into dst's elements, lazily.
void write_tensor(const at::Tensor& dst, const NodeRef& value);

// The realized bytes of t's storage (running pending kernels). A kernel fault becomes the
// exception PyTorch raises for it (IndexError or RuntimeError). Hold the engine lock while
// using the pointer.
const char* storage_bytes(const at::Tensor& t);
// Throws PyTorch's exception for a kernel fault.
[[noreturn]] void throw_fault(const KernelFault& f);

at::Tensor empty_loom(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype);
// Integers computed on the host (segment bounds, index lists) as a Loom tensor of `dtype`.
at::Tensor loom_tensor_of(const std::vector<int64_t>& values, c10::IntArrayRef shape,
                          c10::ScalarType dtype = c10::ScalarType::Long);
at::Tensor empty_loom(c10::IntArrayRef sizes, c10::ScalarType dtype,
                      c10::MemoryFormat format = c10::MemoryFormat::Contiguous);

using EngineLock = std::lock_guard<std::recursive_mutex>;

}  // namespace loom::aten
