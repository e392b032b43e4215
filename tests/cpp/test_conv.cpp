// oneDNN convolutions (runtime/conv.h) against direct loops, forward and both gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/conv.h"

namespace loom {
namespace {

int64_t prod(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// Unravels a row-major index over `sizes`.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> at(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    at[d] = i % sizes[d];
    i /= sizes[d];
  }
  return at;
}

// Calls f(n, g, ocg, cg, out position, kernel offset, input position) for every product
// term of the convolution whose input position lies inside the (unpadded) input.
template <class F>
void each_term(const ConvDims& d, F f) {
  const int64_t cg = d.c / d.groups, ocg = d.oc / d.groups;
  const size_t sp = d.in.size();
  for (int64_t o = 0; o < prod(d.out); ++o)
    for (int64_t k = 0; k < prod(d.kernel); ++k) {
      auto op = unravel(o, d.out), kp = unravel(k, d.kernel);
      int64_t in = 0;
      bool inside = true;
      for (size_t s = 0; s < sp; ++s) {
        int64_t x = op[s] * d.stride[s] - d.padding[s] + kp[s] * d.dilation[s];
        inside = inside && x >= 0 && x < d.in[s];
        in = in * d.in[s] + x;
      }
      if (!inside) continue;
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t g = 0; g < d.groups; ++g)
          for (int64_t a = 0; a < ocg; ++a)
            for (int64_t b = 0; b < cg; ++b) f(n, g, a, b, o, k, in);
    }
}

std::vector<float> random(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "at " << i;
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size());
  for (size_t i = sizes.size(), acc = 1; i-- > 0;) st[i] = int64_t(acc), acc *= size_t(sizes[i]);
  return st;
}

// Strides of (a, b, spatial...) with b innermost (channels-last).
std::vector<int64_t> channels_last(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> st(sizes.size());
  int64_t acc = sizes[1];
  st[1] = 1;
  for (size_t i = sizes.size(); i-- > 2;) st[i] = acc, acc *= sizes[i];
  st[0] = acc;
  return st;
}

// A row-major array laid out with `strides` (and back).
std::vector<float> restride(const std::vector<float>& v, const std::vector<int64_t>& sizes,
                            const std::vector<int64_t>& strides, bool back = false) {
  std::vector<float> r(v.size());
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    auto at = unravel(i, sizes);
    int64_t o = 0;
    for (size_t d = 0; d < at.size(); ++d) o += at[d] * strides[d];
    if (back)
      r[size_t(i)] = v[size_t(o)];
    else
      r[size_t(o)] = v[size_t(i)];
  }
  return r;
}

std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void check(const ConvDims& d, bool cl = false) {
  const int64_t cg = d.c / d.groups, ocg = d.oc / d.groups, kk = prod(d.kernel);
  const int64_t xs = d.n * d.c * prod(d.in), ws = d.oc * cg * kk, ys = d.n * d.oc * prod(d.out);
  auto x = random(xs, 1), w = random(ws, 2), b = random(d.oc, 3), dy = random(ys, 4);
  auto xi = [&](int64_t n, int64_t g, int64_t c, int64_t in) {
    return size_t((n * d.c + g * cg + c) * prod(d.in) + in);
  };
  auto wi = [&](int64_t g, int64_t a, int64_t c, int64_t k) {
    return size_t(((g * ocg + a) * cg + c) * kk + k);
  };
  auto yi = [&](int64_t n, int64_t g, int64_t a, int64_t o) {
    return size_t((n * d.oc + g * ocg + a) * prod(d.out) + o);
  };
  std::vector<double> y(static_cast<size_t>(ys)), dx(static_cast<size_t>(xs)), dw(static_cast<size_t>(ws));
  for (int64_t i = 0; i < ys; ++i) y[size_t(i)] = b[size_t(i / prod(d.out) % d.oc)];
  each_term(d, [&](int64_t n, int64_t g, int64_t a, int64_t c, int64_t o, int64_t k, int64_t in) {
    y[yi(n, g, a, o)] += double(x[xi(n, g, c, in)]) * w[wi(g, a, c, k)];
    dx[xi(n, g, c, in)] += double(dy[yi(n, g, a, o)]) * w[wi(g, a, c, k)];
    dw[wi(g, a, c, k)] += double(dy[yi(n, g, a, o)]) * x[xi(n, g, c, in)];
  });
  // Row-major arrays, or channels-last ones (restrided in and out).
  const auto xsz = cat({d.n, d.c}, d.in), wsz = cat({d.oc, cg}, d.kernel), ysz = cat({d.n, d.oc}, d.out);
  auto layout = cl ? channels_last : contiguous;
  const ConvLayout l{layout(xsz), layout(wsz), layout(ysz)};
  auto in = [&](const std::vector<float>& v, const std::vector<int64_t>& sz, const std::vector<int64_t>& st) {
    return restride(v, sz, st);
  };
  auto out = [&](const std::vector<float>& v, const std::vector<int64_t>& sz, const std::vector<int64_t>& st) {
    return restride(v, sz, st, true);
  };
  std::vector<float> gy(static_cast<size_t>(ys)), gdx(static_cast<size_t>(xs)), gdw(static_cast<size_t>(ws));
  conv_forward_f32(d, l, in(x, xsz, l.x).data(), in(w, wsz, l.w).data(), b.data(), gy.data());
  expect_near(out(gy, ysz, l.y), y);
  conv_backward_data_f32(d, l, in(dy, ysz, l.y).data(), in(w, wsz, l.w).data(), gdx.data());
  expect_near(out(gdx, xsz, l.x), dx);
  conv_backward_weights_f32(d, l, in(x, xsz, l.x).data(), in(dy, ysz, l.y).data(), gdw.data());
  expect_near(out(gdw, wsz, l.w), dw);
}

std::vector<int64_t> out_of(const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                            const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                            const std::vector<int64_t>& dl) {
  std::vector<int64_t> o;
  for (size_t i = 0; i < in.size(); ++i)
    o.push_back((in[i] + 2 * p[i] - dl[i] * (k[i] - 1) - 1) / s[i] + 1);
  return o;
}

ConvDims dims(int64_t n, int64_t c, int64_t oc, int64_t groups, std::vector<int64_t> in,
              std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p,
              std::vector<int64_t> dl) {
  return {n, c, oc, groups, in, k, out_of(in, k, s, p, dl), s, p, dl};
}

TEST(Conv, MatchesDirectLoops) {
  if (!conv_library_available()) GTEST_SKIP() << "built without oneDNN";
  check(dims(2, 3, 8, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}));
  check(dims(2, 6, 4, 2, {9, 8}, {3, 2}, {2, 1}, {1, 0}, {1, 2}));  // groups, stride, dilation
  check(dims(3, 4, 4, 4, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}));  // depthwise
  check(dims(2, 5, 7, 1, {13, 11}, {4, 4}, {3, 3}, {0, 2}, {1, 1}));  // rows left over
  check(dims(2, 3, 5, 1, {20}, {5}, {2}, {1}, {1}));                  // 1-d
  check(dims(1, 2, 3, 1, {5, 6, 4}, {3, 3, 2}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}));  // 3-d
  check(dims(2, 8, 16, 1, {5, 5}, {1, 1}, {1, 1}, {0, 0}, {1, 1}));  // 1x1
}

TEST(Conv, ChannelsLastArrays) {
  if (!conv_library_available()) GTEST_SKIP() << "built without oneDNN";
  check(dims(2, 3, 8, 1, {10, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}), true);
  check(dims(2, 6, 4, 2, {9, 8}, {3, 2}, {2, 1}, {1, 0}, {1, 2}), true);
  check(dims(3, 4, 4, 4, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}), true);
}

}  // namespace
}  // namespace loom
