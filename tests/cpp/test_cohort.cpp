// Cohorts (NOTE [Cohorts], schedule/fuse.cpp) and joint reductions (NOTE [Joint reductions],
// codegen/render_c.cpp): values an op marks as computed together are stored by one kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "codegen/kernel.h"
#include "core/graph.h"
#include "core/metrics.h"
#include "runtime/executor.h"
#include "schedule/realize.h"
#include "buffers.h"

using namespace loom;
using loom::test_util::make_f32;
using loom::test_util::read_as;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

// A row's sum and its argmax, each held by a pending store: realizing one computes both.
TEST(Cohort, PendingMembersAreStoredByTheSameKernel) {
  auto x = make_f32({1, 5, 3, 4, 0, 7, 2, 2});
  Shape s{2, 4}, row{2, 1};
  Buffer sums(8), where(16), dropped(8);
  std::weak_ptr<Node> argmax_node, min_node;
  {
    NodeRef v = read(*x, DType::Float32, View::contiguous(s));
    NodeRef sum = reduce(ReduceKind::Sum, v, {1}, DType::Float32);
    NodeRef argmax = reduce(ReduceKind::ArgMax, v, {1}, DType::Int64);
    NodeRef min = reduce(ReduceKind::Min, v, {1}, DType::Float32);
    make_cohort({sum, argmax, min});
    write(sums, DType::Float32, View::contiguous({2}), reindex(sum, {2}, {{0, 0}, {0}, {1}}));
    write(where, DType::Int64, View::contiguous(row), argmax);
    argmax_node = argmax;
    min_node = min;  // read by nothing: it dies here
  }
  ASSERT_TRUE(min_node.expired());
  metrics().reset();
  EXPECT_EQ(read_as<float>(sums), (std::vector<float>{13, 11}));
  EXPECT_EQ(metrics().kernels_run.load(), 1);
  ASSERT_FALSE(argmax_node.expired());
  EXPECT_TRUE(argmax_node.lock()->stored);
  metrics().reset();
  EXPECT_EQ(read_as<int64_t>(where), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(metrics().kernels_run.load(), 1);  // a copy of the stored indices
}

// A member that reads storage still pending elsewhere, or of another shape, is left to its
// own kernel.
TEST(Cohort, MembersOfAnotherShapeAreLeftAlone) {
  auto x = make_f32({1, 2, 3, 4});
  Buffer a(8), b(4);
  std::weak_ptr<Node> total;
  {
    NodeRef v = read(*x, DType::Float32, View::contiguous({2, 2}));
    NodeRef rows = reduce(ReduceKind::Sum, v, {1}, DType::Float32);
    NodeRef all = reduce(ReduceKind::Sum, v, {0, 1}, DType::Float32);
    rows->cohort.push_back(all);  // not through make_cohort, which refuses it
    write(a, DType::Float32, View::contiguous({2, 1}), rows);
    write(b, DType::Float32, View::contiguous({1, 1}), all);
    total = all;
  }
  EXPECT_EQ(read_as<float>(a), (std::vector<float>{3, 7}));
  EXPECT_FALSE(total.lock()->stored);
  EXPECT_EQ(read_as<float>(b), (std::vector<float>{10}));
}

// Two reductions over loops of the same sizes, neither reading the other, share one loop
// nest; a reduction reading another's result does not join it.
TEST(Codegen, IndependentReductionsShareOneLoop) {
  auto x = make_f32(std::vector<float>(64 * 100, 1.0f));
  Shape s{64, 100}, row{64, 1};
  NodeRef v = read(*x, DType::Float32, View::contiguous(s));
  NodeRef sum = reduce(ReduceKind::Sum, v, {1}, DType::Float32);
  NodeRef sumsq = reduce(ReduceKind::Sum, binary(Op::Mul, v, v), {1}, DType::Float32);
  NodeRef both = binary(Op::Add, sum, sumsq);
  LKernel k = lower_store(View::contiguous(row), DType::Float32, both, nullptr);
  collapse_loops(k);
  std::string src = render_c(k);
  EXPECT_EQ(count(src, " += 32LL) {"), 1u) << src;  // one vectorized reduction loop

  NodeRef centered = binary(Op::Sub, v, expand(sum, s));
  NodeRef var = reduce(ReduceKind::Sum, binary(Op::Mul, centered, centered), {1}, DType::Float32);
  LKernel k2 = lower_store(View::contiguous(row), DType::Float32, var, nullptr);
  collapse_loops(k2);
  EXPECT_EQ(count(render_c(k2), " += 32LL) {"), 2u);
}

// The outputs of a store kernel beside its own: each value at its own index and buffer.
TEST(Codegen, StoreKernelWritesExtraOutputs) {
  auto x = make_f32({1, -2, 3, -4, 5, -6});
  Shape s{2, 3}, row{2, 1};
  NodeRef v = read(*x, DType::Float32, View::contiguous(s));
  NodeRef mx = reduce(ReduceKind::Max, v, {1}, DType::Float32);
  NodeRef mn = reduce(ReduceKind::Min, v, {1}, DType::Float32);
  NodeRef arg = reduce(ReduceKind::ArgMin, v, {1}, DType::Int64);
  auto out = allocate_memory(8), lows = allocate_memory(8), at = allocate_memory(16);
  std::vector<ExtraStore> extra{{View::contiguous(row), DType::Float32, mn, lows},
                                {View::contiguous(row), DType::Int64, arg, at}};
  run_store_kernel(View::contiguous(row), DType::Float32, mx, out, extra);
  finish_tasks();  // the kernel may still run on the executor
  const float* o = static_cast<const float*>(out->data);
  const float* l = static_cast<const float*>(lows->data);
  const int64_t* i = static_cast<const int64_t*>(at->data);
  EXPECT_EQ(std::vector<float>(o, o + 2), (std::vector<float>{3, 5}));
  EXPECT_EQ(std::vector<float>(l, l + 2), (std::vector<float>{-2, -6}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 2), (std::vector<int64_t>{1, 2}));
}

// A reduction nested in another's summand (a variance's mean) does not take a partner the
// outer one has already joined (the mean the output reads beside it): the partner would be
// declared twice and its sum split between the two.
TEST(Codegen, NestedReductionLeavesTheOuterPartnersAlone) {
  // One row of one element has no loops at all: every reduction is emitted where the
  // output needs it, the variance's mean inside the variance's body.
  for (auto [rows, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 1}, {2, 4}, {2, 64}}) {
    std::vector<float> host(size_t(rows * n));
    for (size_t i = 0; i < host.size(); ++i) host[i] = float(i % 7) - 2.5f;
    auto x = make_f32(host);
    Shape s{rows, n}, row{rows, 1};
    NodeRef v = read(*x, DType::Float32, View::contiguous(s));
    auto c = [&](double a, const Shape& sh) { return constant(Scalar::of_float(a), DType::Float32, sh); };
    NodeRef mean = binary(Op::Div, reduce(ReduceKind::Sum, v, {1}, DType::Float32), c(double(n), row));
    NodeRef d = binary(Op::Sub, v, expand(mean, s));
    NodeRef var = reduce(ReduceKind::Sum, binary(Op::Mul, d, d), {1}, DType::Float32);
    NodeRef total = reduce(ReduceKind::Sum, v, {1}, DType::Float32);
    auto out = allocate_memory(size_t(rows * 4));
    run_store_kernel(View::contiguous(row), DType::Float32, binary(Op::Add, var, total), out);
    finish_tasks();  // the kernel may still run on the executor
    const float* o = static_cast<const float*>(out->data);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < n; ++j) sum += host[size_t(r * n + j)];
      for (int64_t j = 0; j < n; ++j) sq += std::pow(host[size_t(r * n + j)] - sum / double(n), 2);
      EXPECT_NEAR(o[r], sq + sum, 1e-3) << "n = " << n << ", row " << r;
    }
  }
}
