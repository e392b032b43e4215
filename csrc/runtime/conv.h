// Float32 convolutions run by oneDNN (libdnnl, the library torch's CPU convolutions use),
// on strided (N, C, spatial...) arrays. Built only where the headers were found
// (LOOM_HAVE_DNNL); otherwise conv_library_available() is false and convolutions are
// im2col and BLAS products (csrc/aten/ops_conv.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace loom {

// A convolution of an (n, c, in...) input with an (oc, c / groups, kernel...) weight into
// an (n, oc, out...) output; every spatial list has one entry per spatial dim (1 to 3).
struct ConvDims {
  int64_t n, c, oc, groups;
  std::vector<int64_t> in, kernel, out, stride, padding, dilation;
};

// Whether convolutions run on the library: compiled with oneDNN and not turned off (with
// LOOM_DNNL=0 at start-up, or set_conv_library(false)).
bool conv_library_available();
void set_conv_library(bool on);

// Element strides of the three arrays of a convolution, in the dim order above: x (the
// input, or its gradient), w (the weight, or its gradient), y (the output, or its
// gradient). Any strided layout without overlap (contiguous, channels-last, ...).
struct ConvLayout {
  std::vector<int64_t> x, w, y;
};

// y = conv(x, w) + bias (bias, contiguous, may be null).
void conv_forward_f32(const ConvDims& d, const ConvLayout& l, const float* x, const float* w,
                      const float* bias, float* y);
// dx = the gradient of conv(x, w) with respect to x, given dy.
void conv_backward_data_f32(const ConvDims& d, const ConvLayout& l, const float* dy,
                            const float* w, float* dx);
// dw = the gradient of conv(x, w) with respect to w, given x and dy.
void conv_backward_weights_f32(const ConvDims& d, const ConvLayout& l, const float* x,
                               const float* dy, float* dw);

}  // namespace loom
