// Matrix products: mm, addmm, bmm, baddbmm (and matmul/linear through them), dot, mv.
// Float32/Float64 products are extern BLAS calls in the schedule (NOTE [Extern calls]);
// their alpha/beta/bias epilogue is an elementwise value fused into its consumer. Other
// dtypes are generated sum-of-products reductions.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cstring>

#include "aten/op_util.h"
#include "core/extern.h"
#include "runtime/blas.h"

namespace loom::aten {

bool blas_dtype(DType t) { return t == DType::Float32 || t == DType::Float64; }

namespace {

using at::Tensor;

// How BLAS reads a matrix view: row-major (trans false) or transposed, and its leading
// dimension; nullopt when neither fits (the scheduler then makes it contiguous).
struct MatrixLayout {
  bool trans;
  int64_t ld;
};

std::optional<MatrixLayout> matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1)))
    return MatrixLayout{false, std::max<int64_t>({rs, cols, 1})};
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1)))
    return MatrixLayout{true, std::max<int64_t>({cs, rows, 1})};
  return std::nullopt;
}

bool blas_view(const View& v) {
  size_t d = v.sizes.size();
  return d >= 2 && matrix_layout(v.sizes[d - 2], v.sizes[d - 1], v.strides[d - 2], v.strides[d - 1]);
}

// A batched product of (B..., m, k) and (B..., k, n) values (a batch dim of size 1 in one
// operand broadcasts) into a contiguous (B..., m, n) storage; with a margin, each row of
// n results lies between `margin` zeros on either side (rows of n + 2 * margin).
// `t` is the operands' dtype; the result is float32 for bfloat16 ones (NOTE [bfloat16
// products] in runtime/blas.cpp), else t.
NodeRef gemm_call(const NodeRef& a, const NodeRef& b, const Shape& batch, DType t,
                  int64_t margin = 0) {
  const DType out_t = t == DType::BFloat16 ? DType::Float32 : t;
  const size_t r = batch.size();
  const int64_t m = a->shape[r], k = a->shape[r + 1], n = b->shape[r + 1];
  const int64_t count = numel(batch);
  const Shape a_batch(a->shape.begin(), a->shape.begin() + long(r));
  const Shape b_batch(b->shape.begin(), b->shape.begin() + long(r));
  auto call = std::make_shared<ExternCall>();
  // Named with its shape for LOOM_DEBUG=2: batch count, then m x k x n.
  call->name = "gemm " + std::to_string(count) + "x" + std::to_string(m) + "x" +
               std::to_string(k) + "x" + std::to_string(n);
  const int64_t row = n + 2 * margin;
  call->out_nbytes = {std::max<int64_t>(count * m * row, 1) * itemsize(out_t)};
  call->accepts = [](size_t, const View& v) { return blas_view(v); };
  call->fn = [=](const std::vector<ExternInput>& in, const std::vector<std::shared_ptr<Memory>>& out) {
    const View &va = in[0].view, &vb = in[1].view;
    MatrixLayout la = *matrix_layout(m, k, va.strides[r], va.strides[r + 1]);
    MatrixLayout lb = *matrix_layout(k, n, vb.strides[r], vb.strides[r + 1]);
    const int64_t size = itemsize(t), out_size = itemsize(out_t);
    auto* pa = static_cast<const char*>(in[0].mem->data) + va.offset * size;
    auto* pb = static_cast<const char*>(in[1].mem->data) + vb.offset * size;
    auto* pc = static_cast<char*>(out[0]->data);
    if (margin > 0)
      for (int64_t i = 0; i < count * m; ++i) {
        std::memset(pc + i * row * out_size, 0, size_t(margin * out_size));
        std::memset(pc + (i * row + margin + n) * out_size, 0, size_t(margin * out_size));
      }
    std::vector<int64_t> at(r, 0);
    std::vector<GemmJob> jobs;
    for (int64_t i = 0; i < count; ++i) {
      int64_t oa = 0, ob = 0;
      for (size_t j = 0; j < r; ++j) {
        if (a_batch[j] != 1) oa += at[j] * va.strides[j];
        if (b_batch[j] != 1) ob += at[j] * vb.strides[j];
      }
      jobs.push_back({pa + oa * size, pb + ob * size, pc + (i * m * row + margin) * out_size});
      for (size_t j = r; j-- > 0;) {
        if (++at[j] < batch[j]) break;
        at[j] = 0;
      }
    }
    gemm_batch(t, la.trans, lb.trans, m, n, k, la.ld, lb.ld, row, jobs);
  };
  return extern_call(call, {a, b})[0];
}

}  // namespace

// The (B..., m, n) product of a (B..., m, k) and b (B..., k, n) in dtype `t`; batch dims
// of size 1 broadcast.
NodeRef product(const NodeRef& a, const NodeRef& b, DType t) {
  const size_t r = a->shape.size() - 2;
  Shape batch;
  for (size_t j = 0; j < r; ++j) batch.push_back(std::max(a->shape[j], b->shape[j]));
  const int64_t m = a->shape[r], k = a->shape[r + 1], n = b->shape[r + 1];
  Shape out = batch;
  out.insert(out.end(), {m, n});
  // NOTE [Reduced-float products]: float16 and bfloat16 products run as float32 sgemm on
  // their operands widened (exactly) and round once at the end, as the generated sum of
  // products below accumulated them in float too: a bfloat16 512^3 product took 4.7 ms
  // generated, 0.94 so (eager 0.33, oneDNN's bfloat16 gemm). Where oneDNN has a native
  // bfloat16 matmul, bfloat16 operands go to it as they are (NOTE [bfloat16 products]):
  // 0.36-0.42 ms.
  if (t == DType::BFloat16 && native_bf16_gemm() && k > 0 && numel(out) > 0) {
    NodeRef flat = gemm_call(cast(a, t), cast(b, t), batch, t);
    issue_library_call(flat);
    return cast(make_node(Op::Load, DType::Float32, out, {flat}, View::contiguous(out)), t);
  }
  const DType wide = is_reduced_float(t) ? DType::Float32 : t;
  if (blas_dtype(wide) && k > 0 && numel(out) > 0) {
    NodeRef flat = gemm_call(cast(a, wide), cast(b, wide), batch, wide);
    issue_library_call(flat);
    return cast(make_node(Op::Load, wide, out, {flat}, View::contiguous(out)), t);
  }
  // Generated: sum over k of a[., i, k] * b[., k, j], accumulating reduced floats in float.
  DType acc = is_reduced_float(t) ? DType::Float32 : t;
  Shape s = batch;
  s.insert(s.end(), {m, k, n});
  IndexMap ma, mb;  // (B..., m, k, n) -> a (B..., m, k) and b (B..., k, n)
  ma.offs.assign(r + 2, 0);
  mb.offs.assign(r + 2, 0);
  for (size_t j = 0; j < r; ++j) {
    ma.dim_of.push_back(a->shape[j] == 1 ? -1 : int(j));
    ma.mult.push_back(a->shape[j] == 1 ? 0 : 1);
    mb.dim_of.push_back(b->shape[j] == 1 ? -1 : int(j));
    mb.mult.push_back(b->shape[j] == 1 ? 0 : 1);
  }
  ma.dim_of.insert(ma.dim_of.end(), {int(r), int(r + 1), -1});
  ma.mult.insert(ma.mult.end(), {1, 1, 0});
  mb.dim_of.insert(mb.dim_of.end(), {-1, int(r), int(r + 1)});
  mb.mult.insert(mb.mult.end(), {0, 1, 1});
  NodeRef x = reindex(cast(a, acc), s, ma), y = reindex(cast(b, acc), s, mb);
  NodeRef red = reduce(ReduceKind::Sum, binary(Op::Mul, x, y), {int(r + 1)}, acc);
  IndexMap drop;  // (B..., m, 1, n) -> (B..., m, n)
  drop.offs.assign(r + 3, 0);
  for (size_t j = 0; j < r + 2; ++j) {
    drop.dim_of.push_back(int(j < r + 1 ? j : j + 1));
    drop.mult.push_back(1);
  }
  return cast(reindex(red, out, drop), t);
}

NodeRef product_rows_with_margin(const NodeRef& a, const NodeRef& b, DType t, int64_t margin) {
  const size_t r = a->shape.size() - 2;
  Shape batch;
  for (size_t j = 0; j < r; ++j) batch.push_back(std::max(a->shape[j], b->shape[j]));
  TORCH_INTERNAL_ASSERT(blas_dtype(t) && a->shape[r + 1] > 0, "product_rows_with_margin: not a BLAS product");
  return gemm_call(cast(a, t), cast(b, t), batch, t, margin);
}

void assign_result(const Tensor& out, const NodeRef& value) {
  const NodeRef& flat = value->op == Op::Load ? value->src[0] : value;
  Buffer& b = buffer_of(out);
  if (value->op == Op::Load && flat->op == Op::Extern && value->view() == view_of(out) &&
      out.storage_offset() == 0 && flat->shape[0] == b.nbytes && flat->dtype == DType::UInt8 &&
      value->dtype == to_loom(out.scalar_type())) {
    set_value(b, flat);
    return;
  }
  assign(out, value);
}

namespace {

// mm, bmm, addmm and baddbmm take their operands through PyTorch's Conjugate key unresolved
// (its BLAS calls conjugate as they read): a conjugate view's values are conjugated here.
NodeRef read_math(const Tensor& t) {
  NodeRef v = read_tensor(t);
  return t.is_conj() ? unary(Op::Conj, v) : v;
}

// A 2-D (or 3-D) tensor's value as (batch, rows, cols).
NodeRef batched(const Tensor& t) {
  NodeRef v = read_math(t);
  if (t.dim() == 3) return v;
  return reindex(v, {1, t.size(0), t.size(1)}, IndexMap{{0, 0}, {-1, 0, 1}, {0, 1, 1}});
}

NodeRef unbatched(const NodeRef& v) {
  return reindex(v, {v->shape[1], v->shape[2]}, IndexMap{{0, 0, 0}, {1, 2}, {1, 1}});
}

bool is_zero(const c10::Scalar& s) { return s.toComplexDouble() == 0.0; }

// beta * self + alpha * prod, where beta == 0 ignores self (NaN included), as BLAS does.
NodeRef epilogue(const NodeRef& prod, const Tensor& self, const c10::Scalar& beta,
                 const c10::Scalar& alpha, const Shape& shape, DType t) {
  NodeRef r = prod;
  if (!is_one(alpha)) r = binary(Op::Mul, r, scalar_node(alpha, shape, t));
  if (is_zero(beta)) return r;
  NodeRef s = operand(self, shape, t);
  if (self.is_conj()) s = unary(Op::Conj, s);
  if (!is_one(beta)) s = binary(Op::Mul, s, scalar_node(beta, shape, t));
  return binary(Op::Add, s, r);
}

// The CPU's mm/bmm/mv kernels take one dtype, checked after the meta function's checks;
// their message is the running torch's (2.x rewords mm's), from `cpu_call` on ones of the
// operands' dtypes and ranks (NOTE [Shape errors of the running torch]).
template <class CpuCall>
void check_same_dtype(const Tensor& a, const Tensor& b, CpuCall&& cpu_call) {
  auto ones = [](const Tensor& t) {
    return at::ones(std::vector<int64_t>(t.dim(), 1), at::TensorOptions().dtype(t.scalar_type()));
  };
  LOOM_CHECK_AS_CPU(a.scalar_type() == b.scalar_type(), cpu_call(ones(a), ones(b)),
                    "expected scalar type ", a.scalar_type(), " but found ", b.scalar_type());
}

Tensor mm_fn(const Tensor& a, const Tensor& b) {
  check_operands("mm", {a, b});
  Tensor meta = at::meta::mm(to_meta(a), to_meta(b));
  check_same_dtype(a, b, [](const Tensor& x, const Tensor& y) { at::mm(x, y); });
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  DType t = to_loom(meta.scalar_type());
  assign_result(out, unbatched(product(batched(a), batched(b), t)));
  return out;
}

Tensor& mm_out(const Tensor& a, const Tensor& b, Tensor& out) {
  check_operands("mm", {a, b, out});
  Tensor meta = at::meta::mm(to_meta(a), to_meta(b));
  check_same_dtype(a, b, [](const Tensor& x, const Tensor& y) { at::mm(x, y); });
  at::native::resize_output(out, meta.sizes());
  if (out.numel() == 0) return out;
  EngineLock g(engine_mutex());
  assign(out, unbatched(product(batched(a), batched(b), to_loom(meta.scalar_type()))));
  return out;
}

Tensor bmm_fn(const Tensor& a, const Tensor& b) {
  check_operands("bmm", {a, b});
  Tensor meta = at::meta::bmm(to_meta(a), to_meta(b));
  check_same_dtype(a, b, [](const Tensor& x, const Tensor& y) { at::bmm(x, y); });
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  assign_result(out, product(read_math(a), read_math(b), to_loom(meta.scalar_type())));
  return out;
}

Tensor& bmm_out(const Tensor& a, const Tensor& b, Tensor& out) {
  check_operands("bmm", {a, b, out});
  Tensor meta = at::meta::bmm(to_meta(a), to_meta(b));
  check_same_dtype(a, b, [](const Tensor& x, const Tensor& y) { at::bmm(x, y); });
  at::native::resize_output(out, meta.sizes());
  if (out.numel() == 0) return out;
  EngineLock g(engine_mutex());
  assign(out, product(read_math(a), read_math(b), to_loom(meta.scalar_type())));
  return out;
}

// addmm / baddbmm into `out` (which may be self), given the meta result's shape.
Tensor& add_product_into(const Tensor& self, const Tensor& a, const Tensor& b,
                         const c10::Scalar& beta, const c10::Scalar& alpha, Tensor& out,
                         bool batch) {
  if (out.numel() == 0) return out;
  EngineLock g(engine_mutex());
  DType t = to_loom(out.scalar_type());
  Shape shape = shape_of(out.sizes());
  NodeRef p = batch ? product(read_math(a), read_math(b), t)
                    : unbatched(product(batched(a), batched(b), t));
  if (a.size(-1) == 0) p = constant(Scalar::of_int(0), t, shape);
  assign(out, epilogue(p, self, beta, alpha, shape, t));
  return out;
}

Tensor addmm_fn(const Tensor& self, const Tensor& a, const Tensor& b, const c10::Scalar& beta,
                const c10::Scalar& alpha) {
  check_operands("addmm", {self, a, b});
  Tensor meta = at::meta::addmm(to_meta(self), to_meta(a), to_meta(b), beta, alpha);
  Tensor out = result_like(meta);
  return add_product_into(self, a, b, beta, alpha, out, false);
}

Tensor& addmm_out(const Tensor& self, const Tensor& a, const Tensor& b, const c10::Scalar& beta,
                  const c10::Scalar& alpha, Tensor& out) {
  check_operands("addmm", {self, a, b, out});
  Tensor meta = at::meta::addmm(to_meta(self), to_meta(a), to_meta(b), beta, alpha);
  at::native::resize_output(out, meta.sizes());
  return add_product_into(self, a, b, beta, alpha, out, false);
}

Tensor& addmm_ip(Tensor& self, const Tensor& a, const Tensor& b, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  check_operands("addmm_", {self, a, b});
  Tensor m = to_meta(self);
  at::meta::addmm_(m, to_meta(a), to_meta(b), beta, alpha);
  return add_product_into(self, a, b, beta, alpha, self, false);
}

Tensor baddbmm_fn(const Tensor& self, const Tensor& a, const Tensor& b, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  check_operands("baddbmm", {self, a, b});
  Tensor meta = at::meta::baddbmm(to_meta(self), to_meta(a), to_meta(b), beta, alpha);
  Tensor out = result_like(meta);
  return add_product_into(self, a, b, beta, alpha, out, true);
}

Tensor& baddbmm_out(const Tensor& self, const Tensor& a, const Tensor& b, const c10::Scalar& beta,
                    const c10::Scalar& alpha, Tensor& out) {
  check_operands("baddbmm", {self, a, b, out});
  Tensor meta = at::meta::baddbmm(to_meta(self), to_meta(a), to_meta(b), beta, alpha);
  at::native::resize_output(out, meta.sizes());
  return add_product_into(self, a, b, beta, alpha, out, true);
}

Tensor& baddbmm_ip(Tensor& self, const Tensor& a, const Tensor& b, const c10::Scalar& beta,
                   const c10::Scalar& alpha) {
  check_operands("baddbmm_", {self, a, b});
  Tensor m = to_meta(self);
  at::meta::baddbmm_(m, to_meta(a), to_meta(b), beta, alpha);
  return add_product_into(self, a, b, beta, alpha, self, true);
}

// dot and mv are memory-bound: generated reductions. dot and vdot see a vector's
// conjugate bit (PyTorch lets both through the Conjugate key, as their CPU kernels read it);
// vdot conjugates its first vector.
Tensor dot_product(const char* op, const Tensor& a, const Tensor& b, bool conj_a) {
  check_operands(op, {a, b});
  // The CPU's dot_check, in its order; the result is a 0-dim tensor of the vectors' dtype.
  // (PyTorch's meta dot is Python: 10 us a call.)
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "dot : expected both vectors to have same dtype, but found ", a.scalar_type(),
              " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(),
              "inconsistent tensor size, expected tensor [", a.numel(), "] and src [", b.numel(),
              "] to have the same number of elements, but got ", a.numel(), " and ", b.numel(),
              " elements respectively");
  const c10::ScalarType st = a.scalar_type();
  // which dtypes the CPU's kernel takes is the running torch's (2.x's takes float16)
  static const CpuVerdicts verdicts[2];
  verdicts[conj_a].check(st, [&] {
    const Tensor p = probe_operand(st);
    conj_a ? at::vdot(p, p) : at::dot(p, p);
  });
  TORCH_CHECK(st != at::kBool, "\"dot\" not implemented for '", c10::toString(st), "'");
  EngineLock g(engine_mutex());
  Tensor out = empty_loom({}, st, at::MemoryFormat::Contiguous);
  DType t = to_loom(st);
  DType acc = is_reduced_float(t) ? DType::Float32 : t;
  auto value = [&](const Tensor& v, bool conj) {
    NodeRef x = cast(read_tensor(v), acc);
    return conj != v.is_conj() ? unary(Op::Conj, x) : x;
  };
  NodeRef r = reduce(ReduceKind::Sum, binary(Op::Mul, value(a, conj_a && a.is_complex()), value(b, false)),
                     {0}, acc);
  assign(out, cast(reindex(r, {}, IndexMap{{0}, {}, {}}), t));
  return out;
}

Tensor dot_fn(const Tensor& a, const Tensor& b) { return dot_product("dot", a, b, false); }
Tensor vdot_fn(const Tensor& a, const Tensor& b) { return dot_product("vdot", a, b, true); }

// m @ v as a reduction over m's rows, in dtype t's accumulator, rounded to t.
NodeRef mv_value(const Tensor& m, const Tensor& v, DType t) {
  DType acc = is_reduced_float(t) ? DType::Float32 : t;
  Shape s = shape_of(m.sizes());
  NodeRef x = reindex(cast(read_tensor(v), acc), s, IndexMap{{0}, {-1, 0}, {0, 1}});
  NodeRef r = reduce(ReduceKind::Sum, binary(Op::Mul, cast(read_tensor(m), acc), x), {1}, acc);
  return cast(reindex(r, {s[0]}, IndexMap{{0, 0}, {0}, {1}}), t);
}

Tensor mv_fn(const Tensor& m, const Tensor& v) {
  check_operands("mv", {m, v});
  check_same_dtype(m, v, [](const Tensor& x, const Tensor& y) { at::mv(x, y); });
  Tensor meta = at::mv(to_meta(m), to_meta(v));
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  assign(out, mv_value(m, v, to_loom(meta.scalar_type())));
  return out;
}

// addmv: beta * self + alpha * (mat @ vec); an empty product is 0.
Tensor& addmv_into(const Tensor& self, const Tensor& mat, const Tensor& vec,
                   const c10::Scalar& beta, const c10::Scalar& alpha, Tensor& out) {
  if (out.numel() == 0) return out;
  check_same_dtype(mat, vec, [&](const Tensor& x, const Tensor& y) {
    at::addmv(at::ones({1}, at::TensorOptions().dtype(self.scalar_type())), x, y);
  });
  EngineLock g(engine_mutex());
  DType t = to_loom(out.scalar_type());
  Shape shape = shape_of(out.sizes());
  NodeRef p = mat.size(1) == 0 ? constant(Scalar::of_int(0), t, shape) : mv_value(mat, vec, t);
  assign(out, epilogue(p, self, beta, alpha, shape, t));
  return out;
}
Tensor addmv_fn(const Tensor& self, const Tensor& mat, const Tensor& vec, const c10::Scalar& beta,
                const c10::Scalar& alpha) {
  check_operands("addmv", {self, mat, vec});
  Tensor out = result_like(at::meta::addmv(to_meta(self), to_meta(mat), to_meta(vec), beta, alpha));
  return addmv_into(self, mat, vec, beta, alpha, out);
}
Tensor& addmv_out(const Tensor& self, const Tensor& mat, const Tensor& vec, const c10::Scalar& beta,
                  const c10::Scalar& alpha, Tensor& out) {
  check_operands("addmv", {self, mat, vec, out});
  Tensor mo = to_meta(out);
  at::meta::addmv_outf(to_meta(self), to_meta(mat), to_meta(vec), beta, alpha, mo);
  match_out(out, mo);
  return addmv_into(self, mat, vec, beta, alpha, out);
}
Tensor& addmv_ip(Tensor& self, const Tensor& mat, const Tensor& vec, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  return addmv_out(self, mat, vec, beta, alpha, self);
}

// addbmm: beta * self + alpha * sum over b of batch1[b] @ batch2[b], one product of the
// batches laid side by side: (n, B k) @ (B k, p).
Tensor& addbmm_out(const Tensor& self, const Tensor& b1, const Tensor& b2, const c10::Scalar& beta,
                   const c10::Scalar& alpha, Tensor& out) {
  check_operands("addbmm", {self, b1, b2, out});
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0), "batch1 and batch2 must have same number of batches, got ",
              b1.size(0), " and ", b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), "Incompatible matrix sizes for bmm (", b1.size(1), "x",
              b1.size(2), " and ", b2.size(1), "x", b2.size(2), ")");
  Tensor s = self.expand({b1.size(1), b2.size(2)});
  at::native::resize_output(out, s.sizes());
  const int64_t n = b1.size(1), k = b1.size(0) * b1.size(2), p = b2.size(2);
  Tensor a = b1.transpose(0, 1).reshape({n, k}), b = b2.reshape({k, p});
  return add_product_into(s, a, b, beta, alpha, out, false);
}
Tensor addbmm_fn(const Tensor& self, const Tensor& b1, const Tensor& b2, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return addbmm_out(self, b1, b2, beta, alpha, out);
}
Tensor& addbmm_ip(Tensor& self, const Tensor& b1, const Tensor& b2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  return addbmm_out(self, b1, b2, beta, alpha, self);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm", TORCH_FN(mm_fn));
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("bmm", TORCH_FN(bmm_fn));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("addmm", TORCH_FN(addmm_fn));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("addmm_", TORCH_FN(addmm_ip));
  m.impl("baddbmm", TORCH_FN(baddbmm_fn));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  m.impl("baddbmm_", TORCH_FN(baddbmm_ip));
  m.impl("dot", TORCH_FN(dot_fn));
  m.impl("vdot", TORCH_FN(vdot_fn));
  m.impl("mv", TORCH_FN(mv_fn));
  m.impl("addmv", TORCH_FN(addmv_fn));
  m.impl("addmv.out", TORCH_FN(addmv_out));
  m.impl("addmv_", TORCH_FN(addmv_ip));
  m.impl("addbmm", TORCH_FN(addbmm_fn));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
  m.impl("addbmm_", TORCH_FN(addbmm_ip));
}

}  // namespace loom::aten
