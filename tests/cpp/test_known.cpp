// NOTE [Known values]: integer values that follow from constants, computed on the host
// without a kernel.
#include <gtest/gtest.h>

#include <cstring>

#include "core/graph.h"
#include "core/known.h"
#include "core/metrics.h"

using namespace loom;

namespace {

NodeRef int_const(int64_t v, DType t, const Shape& s) { return constant(Scalar::of_int(v), t, s); }

using Ints = std::vector<int64_t>;

}  // namespace

TEST(Known, ConstantsIotaAndArithmeticWrapLikeTheirDtype) {
  Shape s{2, 3};
  NodeRef col = iota(DType::Int32, s, 1), row = iota(DType::Int32, s, 0);
  NodeRef v =
      binary(Op::Sub, binary(Op::Mul, binary(Op::Add, col, row), int_const(2, DType::Int32, s)),
             int_const(3, DType::Int32, s));
  EXPECT_EQ(known_values(v, 100), (Ints{-3, -1, 1, -1, 1, 3}));
  // 100 * 3 does not fit an int8: it wraps, as the kernel's arithmetic does.
  NodeRef narrow =
      binary(Op::Mul, int_const(100, DType::Int8, {2}), int_const(3, DType::Int8, {2}));
  EXPECT_EQ(known_values(narrow, 100), (Ints{44, 44}));
  NodeRef picked = where(binary(Op::Gt, col, int_const(0, DType::Int32, s)), col,
                         int_const(-1, DType::Int32, s));
  EXPECT_EQ(known_values(cast(picked, DType::Int64), 100), (Ints{-1, 1, 2, -1, 1, 2}));
  // Transposed and broadcast reads.
  EXPECT_EQ(
      known_values(expand(reindex(row, {3, 2}, IndexMap{{0, 0}, {1, 0}, {1, 1}}), {2, 3, 2}), 100),
      (Ints{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(Known, StoresOntoFreshOrRealizedStorage) {
  Buffer b(4 * 8);
  write(b, DType::Int64, View::contiguous({4}), int_const(1, DType::Int64, {4}));
  write(b, DType::Int64, View{{}, {}, 3}, int_const(10, DType::Int64, {}));
  metrics().reset();
  EXPECT_EQ(known_values(read(b, DType::Int64, View{{2}, {2}, 1}), 100), (Ints{1, 10}));
  EXPECT_EQ(metrics().kernels_run.load(), 0);
  EXPECT_FALSE(b.value()->realized);

  // Fresh storage of which one element was written: only that element is known.
  Buffer fresh(4 * 8);
  write(fresh, DType::Int64, View{{1}, {1}, 2}, int_const(5, DType::Int64, {1}));
  EXPECT_EQ(known_values(read(fresh, DType::Int64, View{{1}, {1}, 2}), 100), (Ints{5}));
  EXPECT_FALSE(known_values(read(fresh, DType::Int64, View::contiguous({4})), 100));

  // Realized memory under a pending write.
  Buffer r(3 * 4);
  const int32_t host[3] = {7, 8, 9};
  write_host(r, host, sizeof host);
  write(r, DType::Int32, View{{1}, {1}, 0},
        binary(Op::Add, read(r, DType::Int32, View{{1}, {1}, 2}), int_const(1, DType::Int32, {1})));
  EXPECT_EQ(known_values(read(r, DType::Int32, View::contiguous({3})), 100), (Ints{10, 8, 9}));
}

TEST(Known, FloatsLargeValuesAndOtherDtypesAreNotFollowed) {
  NodeRef f = binary(Op::Mul, iota(DType::Float32, {2}, 0),
                     constant(Scalar::of_float(1.5), DType::Float32, {2}));
  EXPECT_FALSE(known_values(cast(f, DType::Int64), 100));
  EXPECT_FALSE(known_values(iota(DType::Int64, {101}, 0), 100));
  EXPECT_TRUE(known_values(iota(DType::Int64, {100}, 0), 100));
  // An int32 storage read as int64 (a reinterpretation) is not followed.
  Buffer b(4 * 4);
  write(b, DType::Int32, View::contiguous({4}), int_const(1, DType::Int32, {4}));
  EXPECT_FALSE(known_values(read(b, DType::Int64, View::contiguous({2})), 100));
  // Past the node budget.
  NodeRef v = int_const(0, DType::Int64, {1});
  for (int i = 0; i < 50; ++i) v = binary(Op::Add, v, int_const(i, DType::Int64, {1}));
  EXPECT_EQ(known_values(v, 100), (Ints{1225}));
  EXPECT_FALSE(known_values(v, 100, 20));
}

// A mask's negation and the running count of its true entries (boolean-mask indexing,
// masked_scatter) are known when the mask is.
TEST(Known, MaskNegationAndRunningCounts) {
  Shape s{2, 3};
  NodeRef col = iota(DType::Int64, s, 1);
  NodeRef mask = binary(Op::Ne, col, int_const(1, DType::Int64, s));  // 1 0 1 / 1 0 1
  NodeRef inverted = unary(Op::BitwiseNot, mask);
  EXPECT_EQ(known_values(inverted, 100), (Ints{0, 1, 0, 0, 1, 0}));
  NodeRef flips = unary(Op::BitwiseNot, int_const(5, DType::Int8, {1}));
  EXPECT_EQ(known_values(flips, 100), (Ints{-6}));
  // Along dim 1, and along dim 0 (each column on its own).
  NodeRef as_int = cast(mask, DType::Int64);
  EXPECT_EQ(known_values(scan(ReduceKind::Sum, as_int, 1), 100),
            (Ints{1, 1, 2, 1, 1, 2}));
  EXPECT_EQ(known_values(scan(ReduceKind::Sum, as_int, 0), 100),
            (Ints{1, 0, 1, 2, 0, 2}));
  EXPECT_FALSE(known_values(scan(ReduceKind::Prod, as_int, 0), 100));
}
