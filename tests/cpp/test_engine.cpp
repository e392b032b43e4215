// End-to-end engine tests without torch: graphs on buffers, realized through generated C.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "codegen/kernel.h"
#include "core/graph.h"
#include "core/metrics.h"
#include "runtime/executor.h"
#include "schedule/realize.h"
#include "buffers.h"

using namespace loom;
using loom::test_util::make_f32;
using loom::test_util::read_f32;

namespace {

NodeRef load_all(const Buffer& b, const Shape& shape) {
  return read(b, DType::Float32, View::contiguous(shape));
}

void store_all(Buffer& b, const NodeRef& v) {
  write(b, DType::Float32, View::contiguous(v->shape), v);
}

}  // namespace

TEST(Engine, FusedChainIsOneKernel) {
  const int n = 1000;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i) * 0.01f;
  auto x_owner = make_f32(host);
  Buffer& x = *x_owner;
  Shape s{n};
  NodeRef v = load_all(x, s);
  // Five ops, each into its own buffer, as eager tensors would be.
  std::deque<Buffer> tmp;
  NodeRef cur = v;
  Op ops[] = {Op::Mul, Op::Add, Op::Sub, Op::Mul, Op::Add};
  for (Op op : ops) {
    tmp.emplace_back(int64_t(n * 4));
    store_all(tmp.back(), binary(op, cur, constant(Scalar::of_float(1.5), DType::Float32, s)));
    cur = load_all(tmp.back(), s);
  }
  metrics().reset();
  std::vector<float> out = read_f32(tmp.back());
  EXPECT_EQ(metrics().kernels_run.load(), 1);
  for (int i = 0; i < n; ++i) {
    float e = (((host[i] * 1.5f + 1.5f) - 1.5f) * 1.5f) + 1.5f;
    EXPECT_FLOAT_EQ(out[i], e);
  }
}

TEST(Engine, ReduceWithPrologueIsOneKernel) {
  std::vector<float> host(12);
  for (int i = 0; i < 12; ++i) host[i] = float(i);
  auto x_owner = make_f32(host);
  Buffer& x = *x_owner;
  Shape s{3, 4};
  Buffer y(12 * 4);
  NodeRef v = load_all(x, s);
  store_all(y, binary(Op::Add, binary(Op::Mul, v, constant(Scalar::of_int(2), DType::Float32, s)),
                      constant(Scalar::of_int(1), DType::Float32, s)));
  Buffer z(3 * 4);
  write(z, DType::Float32, View::contiguous({3, 1}),
        reduce(ReduceKind::Sum, load_all(y, s), {1}, DType::Float32));
  metrics().reset();
  std::vector<float> out = read_f32(z);
  EXPECT_EQ(metrics().kernels_run.load(), 1);
  EXPECT_FLOAT_EQ(out[0], 1 + 3 + 5 + 7);
  EXPECT_FLOAT_EQ(out[2], 17 + 19 + 21 + 23);
}

TEST(Engine, InPlaceWriteThroughViewAndOldReader) {
  std::vector<float> host{1, 2, 3, 4};
  auto a_owner = make_f32(host);
  Buffer& a = *a_owner;
  // y = a * 2 recorded before a[1:] += 10: y keeps the old value.
  Buffer y(16);
  store_all(y, binary(Op::Mul, load_all(a, {4}), constant(Scalar::of_int(2), DType::Float32, {4})));
  View tail{{3}, {1}, 1};
  NodeRef old_tail = read(a, DType::Float32, tail);
  write(a, DType::Float32, tail,
        binary(Op::Add, old_tail, constant(Scalar::of_int(10), DType::Float32, {3})));
  EXPECT_EQ(read_f32(a), (std::vector<float>{1, 12, 13, 14}));
  EXPECT_EQ(read_f32(y), (std::vector<float>{2, 4, 6, 8}));
}

// NOTE [Live state]: an in-place update of a live buffer read by another kernel is stored
// (in place), so the next update builds on memory, not on its history: by the reader's
// kernel, beside its output (NOTE [Sibling stores]). Once the buffer has died, the same
// update only inlines into its reader.
TEST(Engine, InPlaceWriteIntoLiveBufferIsStoredWhenRead) {
  Shape s{4};
  auto one = constant(Scalar::of_int(1), DType::Float32, s);
  for (bool alive : {true, false}) {
    auto p_owner = make_f32({1, 2, 3, 4});
    realize(*p_owner);
    const void* mem = p_owner->value()->realized->data;
    store_all(*p_owner, binary(Op::Add, load_all(*p_owner, s), one));  // p += 1
    Buffer out(16);
    store_all(out, binary(Op::Mul, load_all(*p_owner, s), one));
    if (!alive) p_owner.reset();
    metrics().reset();
    EXPECT_EQ(read_f32(out), (std::vector<float>{2, 3, 4, 5}));
    EXPECT_EQ(metrics().kernels_run.load(), 1);
    EXPECT_EQ(metrics().sibling_stores.load(), alive ? 1 : 0);
    if (alive) {
      ASSERT_TRUE(p_owner->value()->realized);
      EXPECT_EQ(p_owner->value()->realized->data, mem);  // stored in place
    }
  }
}

TEST(Engine, InPlaceReusesMemoryWhenUnread) {
  auto a_owner = make_f32({1, 2, 3, 4});
  Buffer& a = *a_owner;
  realize(a);
  const void* before = a.value()->realized->data;
  write(a, DType::Float32, View::contiguous({4}),
        binary(Op::Add, load_all(a, {4}), constant(Scalar::of_int(1), DType::Float32, {4})));
  realize(a);
  EXPECT_EQ(a.value()->realized->data, before);
  EXPECT_EQ(read_f32(a), (std::vector<float>{2, 3, 4, 5}));
}

TEST(Engine, TransposedReadAndArgmaxAndScan) {
  auto a_owner = make_f32({1, 5, 2, 7, 0, 3});
  Buffer& a = *a_owner;       // 2x3
  View t{{3, 2}, {1, 3}, 0};  // transpose
  Buffer c(24);
  store_all(c, unary(Op::Neg, read(a, DType::Float32, t)));
  EXPECT_EQ(read_f32(c), (std::vector<float>{-1, -7, -5, 0, -2, -3}));
  Buffer idx(16);
  write(idx, DType::Int64, View::contiguous({2, 1}),
        reduce(ReduceKind::ArgMax, load_all(a, {2, 3}), {1}, DType::Int64));
  const int64_t* ip = static_cast<const int64_t*>(realized_data(idx));
  EXPECT_EQ(ip[0], 1);
  EXPECT_EQ(ip[1], 0);
  Buffer cs(24);
  store_all(cs, scan(ReduceKind::Sum, load_all(a, {2, 3}), 1));
  EXPECT_EQ(read_f32(cs), (std::vector<float>{1, 6, 8, 7, 7, 10}));
}

TEST(Engine, CompilerFailureNamesSource) {
  setenv("LOOM_CC", "false", 1);
  // A fresh kernel text (a constant nobody used) forces a compile.
  Buffer a(4);
  write(a, DType::Float32, View::contiguous({1}),
        constant(Scalar::of_float(12345.678), DType::Float32, {1}));
  try {
    realize(a);
    FAIL() << "expected a compile error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(".c"), std::string::npos);
  }
  unsetenv("LOOM_CC");
}

TEST(Engine, BroadcastReduceIsComputedOnce) {
  // softmax(x) over rows built as one expression: max and sum are computed once per row,
  // before the row's loop, in the one kernel (NOTE [Hoisted reductions]).
  std::vector<float> host{1, 2, 3, 4, 0, 0, 0, 0};
  auto x_owner = make_f32(host);
  Buffer& x = *x_owner;
  Shape s{2, 4};
  NodeRef v = load_all(x, s);
  NodeRef m = expand(reduce(ReduceKind::Max, v, {1}, DType::Float32), s);
  NodeRef e = unary(Op::Exp, binary(Op::Sub, v, m));
  NodeRef sum = expand(reduce(ReduceKind::Sum, e, {1}, DType::Float32), s);
  Buffer y(32);
  store_all(y, binary(Op::Div, e, sum));
  metrics().reset();
  std::vector<float> out = read_f32(y);
  EXPECT_EQ(metrics().kernels_run.load(), 1);
  float z = std::exp(-3.f) + std::exp(-2.f) + std::exp(-1.f) + 1.f;
  EXPECT_NEAR(out[3], 1.f / z, 1e-6);
  EXPECT_NEAR(out[4], 0.25f, 1e-6);
}

TEST(Engine, ColumnReduceReadByEveryRowGetsItsOwnKernel) {
  // x - x.max(0): per row it would recompute the column maxima, so they are computed apart.
  std::vector<float> host{1, 5, 3, 4, 0, 7, 0, 0};
  auto x_owner = make_f32(host);
  Buffer& x = *x_owner;
  Shape s{2, 4};
  NodeRef v = load_all(x, s);
  Buffer y(32);
  store_all(y, binary(Op::Sub, v, expand(reduce(ReduceKind::Max, v, {0}, DType::Float32), s)));
  metrics().reset();
  std::vector<float> out = read_f32(y);
  EXPECT_EQ(metrics().kernels_run.load(), 2);
  std::vector<float> want{0, -2, 0, 0, -1, 0, -3, -4};
  EXPECT_EQ(out, want);
}

// NOTE [Shared statistics]: column statistics that the kernel reading them through a
// broadcast needs, and that pending values elsewhere read too (batch norm's variance, read
// by the inverse deviation and the running variance; the column sums of its backward,
// which are also the weight and bias gradients), are stored on their own, so the later
// readers do not compute the reductions again.
TEST(Engine, StatisticsReadElsewhereAreStoredOnce) {
  std::vector<float> host{1, 5, 3, 4, 0, 7, 2, 2};
  auto x_owner = make_f32(host);
  Shape s{2, 4}, c{1, 4};
  auto k = [&](double a, const Shape& sh) {
    return constant(Scalar::of_float(a), DType::Float32, sh);
  };
  Buffer y(32), running(16);
  std::weak_ptr<Node> var_node;
  {  // Nodes held here would count as readers.
    NodeRef v = load_all(*x_owner, s);
    NodeRef mean = binary(Op::Div, reduce(ReduceKind::Sum, v, {0}, DType::Float32), k(2, c));
    NodeRef centered = binary(Op::Sub, v, expand(mean, s));
    NodeRef var = binary(
        Op::Div, reduce(ReduceKind::Sum, binary(Op::Mul, centered, centered), {0}, DType::Float32),
        k(2, c));
    store_all(
        y, binary(Op::Mul, centered, expand(unary(Op::Rsqrt, binary(Op::Add, var, k(1, c))), s)));
    write(running, DType::Float32, View::contiguous(c), binary(Op::Mul, var, k(3, c)));
    var_node = var;
  }
  metrics().reset();
  std::vector<float> out = read_f32(y);
  EXPECT_EQ(metrics().kernels_run.load(), 4);  // mean; variance; 1/sqrt; the output
  ASSERT_FALSE(var_node.expired());
  EXPECT_TRUE(var_node.lock()->stored);
  EXPECT_NEAR(out[1], -1.f / std::sqrt(2.f), 1e-6);
  metrics().reset();
  std::vector<float> rv = read_f32(running);
  EXPECT_EQ(metrics().kernels_run.load(), 1);
  EXPECT_EQ(rv, (std::vector<float>{0.75f, 3, 0.75f, 3}));

  // A column sum read through a broadcast and, pending, by a value of its own.
  Buffer g(32), total(16);
  std::weak_ptr<Node> sum_node;
  {
    NodeRef v = load_all(*x_owner, s);
    NodeRef sum = reduce(ReduceKind::Sum, v, {0}, DType::Float32);
    store_all(g, binary(Op::Sub, v, expand(binary(Op::Div, sum, k(2, c)), s)));
    write(total, DType::Float32, View::contiguous(c), sum);
    sum_node = sum;
  }
  read_f32(g);
  ASSERT_FALSE(sum_node.expired());
  EXPECT_TRUE(sum_node.lock()->stored);
  metrics().reset();
  EXPECT_EQ(read_f32(total), (std::vector<float>{1, 12, 5, 6}));
  EXPECT_EQ(metrics().kernels_run.load(), 1);
}

// Complex values share storage with their parts: a Complex64 store is read back as pairs
// of Float32, and products, quotients and |z| use the CPU's plain formulas.
TEST(Engine, ComplexStoresReadAsPartsAndPlainFormulas) {
  Buffer z(4 * 8);
  Shape s{4};
  auto c = [&](double re, double im) {
    return constant(Scalar::of_complex(re, im), DType::Complex64, s);
  };
  NodeRef parts = binary(Op::Complex, iota(DType::Float32, s, 0),
                         constant(Scalar::of_float(-2), DType::Float32, s));
  write(z, DType::Complex64, View::contiguous(s), binary(Op::Mul, parts, c(0, 1)));
  std::vector<float> f = read_f32(z);
  for (int i = 0; i < 4; ++i) {  // (i - 2j) * 1j = 2 + i j
    EXPECT_FLOAT_EQ(f[2 * i], 2.0f);
    EXPECT_FLOAT_EQ(f[2 * i + 1], float(i));
  }
  // Write the imaginary parts through a Float32 view; read |z| and 1 / z as Complex64.
  write(z, DType::Float32, View{{4}, {2}, 1}, constant(Scalar::of_float(0), DType::Float32, s));
  Buffer out(4 * 8);
  NodeRef v = read(z, DType::Complex64, View::contiguous(s));
  NodeRef r =
      binary(Op::Complex, unary(Op::Abs, v), unary(Op::Real, unary(Op::Reciprocal, c(0, 0))));
  write(out, DType::Complex64, View::contiguous(s), r);
  std::vector<float> o = read_f32(out);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(o[2 * i], 2.0f);
    EXPECT_TRUE(std::isnan(o[2 * i + 1]));  // 1 / 0j is nan + nanj, as on the CPU
  }
}

TEST(Engine, ComplexConjAndSum) {
  Buffer z(3 * 16);
  Shape s{3};
  NodeRef v = binary(Op::Complex, iota(DType::Float64, s, 0), iota(DType::Float64, s, 0));
  write(z, DType::Complex128, View::contiguous(s), unary(Op::Conj, v));
  Buffer total(16);
  NodeRef all = read(z, DType::Complex128, View::contiguous(s));
  write(total, DType::Complex128, View::contiguous({1}),
        reduce(ReduceKind::Prod,
               binary(Op::Add, all, constant(Scalar::of_int(1), DType::Complex128, s)), {0},
               DType::Complex128));
  const double* p = static_cast<const double*>(realized_data(total));
  // (1 - 0j)(2 - 1j)(3 - 2j) = (2 - 1j)(3 - 2j) = 4 - 7j
  EXPECT_DOUBLE_EQ(p[0], 4.0);
  EXPECT_DOUBLE_EQ(p[1], -7.0);
}

// A float constant is a kernel argument (NOTE [Scalar arguments]); it is read once before
// the loops, since gcc does not vectorize a loop that reads one.
TEST(Codegen, ScalarArgumentsAreReadBeforeTheLoops) {
  auto x_owner = make_f32(std::vector<float>(64, 1.0f));
  Shape s{8, 8};
  NodeRef v = binary(
      Op::Add,
      binary(Op::Mul, load_all(*x_owner, s), constant(Scalar::of_float(1.5), DType::Float32, s)),
      constant(Scalar::of_float(0.25), DType::Float32, s));
  LKernel k = lower_store(View::contiguous(s), DType::Float32, v, nullptr);
  for (LNode& n : k.nodes)  // as the launcher makes them arguments
    if (n.op == Op::Const) {
      n.slot = int(k.slot_values.size());
      k.slot_values.push_back(0);
    }
  ASSERT_EQ(k.slot_values.size(), 2u);
  std::string src = render_c(k);
  size_t body = src.find("void kernel(");
  ASSERT_NE(body, std::string::npos);
  size_t first_loop = src.find("for (", body), last_arg = src.rfind("a[");
  ASSERT_NE(first_loop, std::string::npos);
  EXPECT_LT(src.find("a[0]", body), first_loop);
  EXPECT_LT(last_arg, first_loop);
}

// metrics().reductions_recomputed counts kernels that compute a reduction again for a loop
// its readers vary along; the scheduler keeps those reductions out of such kernels.
TEST(Codegen, RecomputedReductionsAreSeen) {
  auto x_owner = make_f32(std::vector<float>(64, 1.0f));
  Shape s{8, 8};
  NodeRef x = load_all(*x_owner, s);
  auto recomputes = [&](const NodeRef& v, const View& out) {
    LKernel k = lower_store(out, DType::Float32, v, nullptr);
    collapse_loops(k);
    return recomputes_reductions(k);
  };
  // A row's sum, read by its row: computed once per row, before the row's loop.
  NodeRef row = expand(reduce(ReduceKind::Sum, x, {1}, DType::Float32), s);
  EXPECT_FALSE(recomputes(binary(Op::Sub, x, row), View::contiguous(s)));
  // A column's sum, read by every row: computed again for each row.
  NodeRef col = expand(reduce(ReduceKind::Sum, x, {0}, DType::Float32), s);
  EXPECT_TRUE(recomputes(binary(Op::Sub, x, col), View::contiguous(s)));
  // The sums of an expanded input, stored expanded: once per element stored, as in eager.
  NodeRef rows = read(*x_owner, DType::Float32, View{{4, 8}, {0, 1}, 0});
  EXPECT_FALSE(recomputes(reduce(ReduceKind::Sum, rows, {1}, DType::Float32),
                          View::contiguous({4, 1})));
}

// A select is rendered with its condition marked unpredictable (NOTE [Unpredictable
// selects]): clang otherwise made max pooling's gradient a branch around a load and a
// divide, mispredicted on random indices.
TEST(Codegen, SelectsAreMarkedUnpredictable) {
  auto x_owner = make_f32(std::vector<float>(64, 1.0f));
  Shape s{8, 8};
  NodeRef x = load_all(*x_owner, s);
  NodeRef zero = constant(Scalar::of_float(0.0), DType::Float32, s);
  NodeRef v = where(binary(Op::Gt, x, zero),
                    binary(Op::Div, x, constant(Scalar::of_float(3.0), DType::Float32, s)), zero);
  std::string src = render_c(lower_store(View::contiguous(s), DType::Float32, v, nullptr));
  size_t body = src.find("void kernel(");
  ASSERT_NE(body, std::string::npos);
  EXPECT_NE(src.find("#define LOOM_UNPREDICTABLE"), std::string::npos);
  EXPECT_NE(src.find("(LOOM_UNPREDICTABLE(", body), std::string::npos);
}

// A column sum whose terms scale each row by a per-row value (layer norm's weight
// gradient: sum over rows of grad * (x - mean) * rstd) walks the rows in blocks of
// columns, as a plain column sum does; per-row loads are the same for a whole block.
TEST(Codegen, ColumnSumsWithPerRowTermsAreTiled) {
  auto x_owner = make_f32(std::vector<float>(64 * 32, 1.0f));
  auto r_owner = make_f32(std::vector<float>(64, 2.0f));
  Shape s{64, 32};
  NodeRef x = load_all(*x_owner, s);
  NodeRef per_row = read(*r_owner, DType::Float32, View{{64, 32}, {1, 0}, 0});
  auto render = [&](const NodeRef& terms) {
    LKernel k = lower_store(View::contiguous({1, 32}), DType::Float32,
                            reduce(ReduceKind::Sum, terms, {0}, DType::Float32), nullptr);
    collapse_loops(k);
    return render_c(k);
  };
  EXPECT_NE(render(x).find("x0b"), std::string::npos);
  EXPECT_NE(render(binary(Op::Mul, x, per_row)).find("x0b"), std::string::npos);
  // A row sum stays one output at a time.
  LKernel rows = lower_store(View::contiguous({64, 1}), DType::Float32,
                             reduce(ReduceKind::Sum, x, {1}, DType::Float32), nullptr);
  collapse_loops(rows);
  EXPECT_EQ(render_c(rows).find("x0b"), std::string::npos);
}

// NOTE [Transpose tiles]: a transposing copy whose inner loop would read more lines than
// L1 keeps walks its last two loops in tiles; a short inner loop, or a copy that reads
// along its inner loop, does not.
TEST(Codegen, TransposingCopiesAreTiled) {
  auto x_owner = make_f32(std::vector<float>(64 * 1024, 1.0f));
  auto render = [&](int64_t rows, int64_t cols, bool transposed) {
    // rows x cols, read from a cols x rows array when transposed
    View v = transposed ? View{{rows, cols}, {1, rows}, 0} : View::contiguous({rows, cols});
    NodeRef x = read(*x_owner, DType::Float32, v);
    LKernel k = lower_store(View::contiguous(x->shape), DType::Float32, x, nullptr);
    collapse_loops(k);
    return render_c(k);
  };
  EXPECT_NE(render(64, 1024, true).find("x0b"), std::string::npos);
  EXPECT_EQ(render(1024, 64, true).find("x0b"), std::string::npos);  // 64 lines stay in L1
  EXPECT_EQ(render(64, 1024, false).find("x0b"), std::string::npos);
}

// A column sum stored with outputs beside it (an optimizer kernel whose parameter update
// sums the bias gradient, storing the moments beside it: NOTE [Sibling stores]) keeps
// its column tiles, and stores every output in the block's epilogue.
TEST(Codegen, ColumnTilesStoreOutputsBeside) {
  std::vector<float> host(64 * 32);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i % 7) - 3.0f;
  auto x_owner = make_f32(host);
  auto m_owner = make_f32(std::vector<float>(32, 0.5f));
  Shape s{64, 32}, row{1, 32};
  NodeRef x = load_all(*x_owner, s);
  NodeRef sum = reduce(ReduceKind::Sum, x, {0}, DType::Float32);
  NodeRef m = read(*m_owner, DType::Float32, View::contiguous(row));
  NodeRef moment = binary(Op::Add, m, sum);  // stored beside the update
  NodeRef update = binary(Op::Mul, moment, constant(Scalar::of_float(2.0), DType::Float32, row));
  auto out = allocate_memory(32 * 4), beside = allocate_memory(32 * 4);
  std::vector<ExtraStore> extra{{View::contiguous(row), DType::Float32, moment, beside}};
  LKernel k = lower_store(View::contiguous(row), DType::Float32, update, out, extra);
  collapse_loops(k);
  EXPECT_NE(render_c(k).find("x0b"), std::string::npos);
  run_store_kernel(View::contiguous(row), DType::Float32, update, out, extra);
  finish_tasks();  // the kernel may still run on the executor
  const float* o = static_cast<const float*>(out->data);
  const float* b = static_cast<const float*>(beside->data);
  for (int j = 0; j < 32; ++j) {
    float want = 0.5f;
    for (int i = 0; i < 64; ++i) want += host[size_t(i * 32 + j)];
    EXPECT_EQ(b[j], want) << j;
    EXPECT_EQ(o[j], 2.0f * want) << j;
  }
}

TEST(Engine, PendingScalarConstantReadsAsTheConstant) {
  // A Python number made a one-element tensor: read (and broadcast) as the constant.
  Buffer scalar(4);
  store_all(scalar, constant(Scalar::of_float(2.5), DType::Float32, {}));
  NodeRef r = read(scalar, DType::Float32, View{{3}, {0}, 0});
  EXPECT_EQ(r->op, Op::Const);
  EXPECT_EQ(r->shape, Shape{3});
  EXPECT_EQ(std::get<Scalar>(r->arg).f, 2.5);
  // Another dtype over the same bytes, a larger fill and a realized scalar are loads.
  EXPECT_EQ(read(scalar, DType::Int32, View::contiguous({})).get()->op, Op::Load);
  Buffer fill(16);
  store_all(fill, constant(Scalar::of_float(1), DType::Float32, {4}));
  EXPECT_EQ(load_all(fill, {4})->op, Op::Load);
  EXPECT_EQ(read_f32(scalar)[0], 2.5f);
  EXPECT_EQ(read(scalar, DType::Float32, View::contiguous({}))->op, Op::Load);
  // A setitem loop of such scalars is one kernel.
  auto x_owner = make_f32(std::vector<float>(8, 0.0f));
  Buffer& x = *x_owner;
  std::deque<Buffer> values;
  for (int i = 0; i < 8; ++i) {
    values.emplace_back(4);
    store_all(values.back(), constant(Scalar::of_float(i), DType::Float32, {}));
    write(x, DType::Float32, View{{}, {}, i},
          read(values.back(), DType::Float32, View::contiguous({})));
  }
  metrics().reset();
  std::vector<float> out = read_f32(x);
  EXPECT_EQ(metrics().kernels_run.load(), 1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], float(i));
}
