#include "core/graph.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "core/extern.h"
#include "core/memory.h"
#include "core/node_map.h"

namespace loom {

namespace {

std::atomic<int64_t> g_empty_id{0};
std::atomic<uint64_t> g_buffer_serial{0};
void (*g_bound_hook)(Buffer&) = nullptr;

// The depth of `n` when loads of `base` count as leaves: a chain of writes is realized
// bottom-up, so by the time a store's value is fused its base is memory. Nodes no deeper
// than `floor` cannot matter and are not visited.
int32_t depth_over(const Node* n, const Node* base, int32_t floor,
                   NodeMap<int32_t>& memo) {
  if (n->depth <= floor) return n->depth;
  if (n->op == Op::Load) return n->src[0].get() == base ? 1 : n->depth;
  if (const int32_t* known = memo.find(n)) return *known;
  int32_t d = 0;
  for (const auto& s : n->src) d = std::max(d, depth_over(s.get(), base, floor, memo));
  if (op_kind(n->op) != OpKind::Flat) d += 1;
  memo.emplace(n, d);
  return d;
}

// Sets the depth of a new write node (see Node::depth) and bounds it.
void bound(Buffer& b) {
  Node* w = b.value().get();
  const Node* base = w->src[0].get();
  int32_t d = base->depth;
  if (base->depth == 0) {
    // A base of depth 0 (a fresh buffer, memory) loads at depth 1 either way: the walk
    // would find each source's own depth.
    for (size_t i = 1; i < w->src.size(); ++i) d = std::max(d, w->src[i]->depth);
  } else {
    NodeMap<int32_t> memo;
    for (size_t i = 1; i < w->src.size(); ++i)
      d = std::max(d, depth_over(w->src[i].get(), base, base->depth, memo));
  }
  w->depth = d;
  if (d > kMaxPendingDepth && g_bound_hook) g_bound_hook(b);
}

// Live buffers, a doubly linked list through them (Buffer::prev_, next_): a buffer per
// op's result was an unordered_set node allocated and freed.
struct Registry {
  std::mutex mu;
  Buffer* head = nullptr;
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: buffers may die during exit
  return *r;
}

void check(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("loom graph: ") + what);
}

// A complex value converted to a real dtype keeps its real part, as PyTorch's casts do.
// A double as the nearest value of a half type, through float as c10's conversions go.
double to_reduced_float(double d, DType t) {
  const float f = float(d);
  if (t == DType::Float16) return double(float(_Float16(f)));
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return d;  // NaN
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return double(r);
}

std::atomic<bool> complex_bool_by_both_parts{false};

// A constant of a half type holds a value of that type, as a CPU scalar converted to it
// does (add's alpha, a Python number in a bfloat16 op): computed in float, it would
// otherwise carry more precision than the CPU's.
Scalar normalize(const Scalar& s, DType t) {
  if (is_complex(t)) return Scalar::of_complex(s.to_double(), s.is_int ? 0.0 : s.im);
  if (is_reduced_float(t)) return Scalar::of_float(to_reduced_float(s.to_double(), t));
  if (is_floating(t)) return Scalar::of_float(s.to_double());
  if (t == DType::Bool)
    return Scalar::of_int(s.is_int ? s.i != 0
                                   : s.f != 0 || (complex_bool_by_both_parts.load() && s.im != 0));
  return Scalar::of_int(s.is_int ? s.i : int64_t(s.f));
}

// The map of an expand from `from` to `to`, aligned at the trailing dims.
IndexMap broadcast_map(const Shape& from, const Shape& to) {
  check(to.size() >= from.size(), "expand to fewer dims");
  IndexMap m;
  m.offs.assign(from.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t j = 0; j < to.size(); ++j) {
    if (j < lead) {
      m.dim_of.push_back(-1);
      m.mult.push_back(0);
      continue;
    }
    int64_t k = int64_t(j - lead);
    check(from[k] == to[j] || from[k] == 1, "expand of a non-singleton dim");
    bool same = from[k] == to[j] && to[j] != 1;
    m.dim_of.push_back(same ? int(k) : -1);
    m.mult.push_back(same ? 1 : 0);
  }
  return m;
}

}  // namespace

Buffer::Buffer(int64_t n) : nbytes(n), serial(g_buffer_serial++), alive_(std::make_shared<char>()) {
  hold(make_node(Op::Empty, DType::UInt8, {n}, {}, int64_t(g_empty_id++)));
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  next_ = r.head;
  if (next_) next_->prev_ = this;
  r.head = this;
}

Buffer::~Buffer() {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  (prev_ ? prev_->next_ : r.head) = next_;
  if (next_) next_->prev_ = prev_;
}

// NOTE [Superseded writes]: a write that a later write of the whole buffer replaces is no
// longer state the buffer builds on: only the later write's value reads it (`buf.mul_(m)`
// then `buf.add_(g)`, a gradient's `zero_()` then `+= g`). It forgets its buffer, so fusion
// inlines it into its readers as it inlines a dead buffer's writes (NOTE [Live state]). One
// step only: a write that already replaced a forgotten one stays the buffer's state, so a
// loop of in-place ops fuses in pairs rather than into one ever longer expression.
void Buffer::hold(NodeRef v) {
  if (v->op == Op::Store || v->op == Op::Scatter) v->owner = alive_;
  const Node* old = value_.get();
  if (v->op == Op::Store && old && old->op == Op::Store && !old->realized &&
      v->src[0].get() == old && is_dense_cover(v->view(), nbytes / itemsize(v->dtype)) &&
      !(old->src[0]->op == Op::Store && old->src[0]->owner.expired() && !old->src[0]->realized))
    value_->owner.reset();
  value_ = std::move(v);
}

std::vector<Buffer*> live_buffers() {
  std::vector<Buffer*> all;
  {
    std::lock_guard<std::mutex> g(registry().mu);
    for (Buffer* b = registry().head; b; b = b->next_) all.push_back(b);
  }
  std::sort(all.begin(), all.end(), [](const Buffer* a, const Buffer* b) { return a->serial < b->serial; });
  return all;
}

BufferStats buffer_stats() {
  std::lock_guard<std::mutex> g(registry().mu);
  BufferStats s;
  for (const Buffer* b = registry().head; b; b = b->next_) {
    s.count++;
    s.bytes += b->nbytes;
  }
  return s;
}

std::recursive_mutex& engine_mutex() {
  static std::recursive_mutex* m = new std::recursive_mutex();
  return *m;
}

void set_bound_hook(void (*realize_buffer)(Buffer&)) { g_bound_hook = realize_buffer; }

// A one-element storage whose pending value is a constant (a Python number made a tensor)
// reads as that constant: a batched setitem's value, `x[i] = 3`, then needs no fusion of the
// scalar's store (1000 writes and a sync: 4.6-4.7 -> 3.3-3.6 us a write, the sync's share
// 2.0 -> 0.9). Larger fills keep their loads, so that the stores of `b[i] += 1` over
// `zeros` all read the buffer alike and batch. (A realized node has dropped its sources.)
NodeRef read(const Buffer& b, DType dtype, const View& view) {
  const NodeRef& v = b.value();
  if (v->op == Op::Store && !v->realized && v->dtype == dtype && v->shape[0] == itemsize(dtype) &&
      v->src[1]->op == Op::Const && is_dense_cover(v->view(), 1))
    return make_node(Op::Const, dtype, view.sizes, {}, v->src[1]->arg);
  return make_node(Op::Load, dtype, view.sizes, {v}, view);
}

void write(Buffer& b, DType dtype, const View& view, const NodeRef& value) {
  check(value->shape == view.sizes, "write of a value whose shape differs from the view");
  check(value->dtype == dtype, "write of a value whose dtype differs from the view");
  // Storing what the view already holds (`t[i] = t[i]`, the copy back of `t[i] += 1`)
  // changes nothing.
  if (value->op == Op::Load && value->src[0] == b.value() && value->view() == view) return;
  b.hold(make_node(Op::Store, dtype, {b.nbytes}, {b.value(), value}, view));
  bound(b);
}

NodeRef gather(const Buffer& b, DType dtype, const NodeRef& index) {
  check(index->dtype == DType::Int64, "gather with a non-Int64 index");
  return make_node(Op::Gather, dtype, index->shape, {b.value(), index});
}

void scatter(Buffer& b, DType dtype, const NodeRef& index, const NodeRef& value,
             std::optional<ReduceKind> combine, bool scaled) {
  check(index->dtype == DType::Int64, "scatter with a non-Int64 index");
  check(index->shape == value->shape, "scatter of a value whose shape differs from the index");
  check(value->dtype == dtype, "scatter of a value whose dtype differs from the storage");
  // A product that folded away (a constant source) has nothing to round once.
  scaled = scaled && combine == ReduceKind::Sum && value->op == Op::Mul;
  int64_t mode = combine ? int64_t(*combine) | (scaled ? kScatterScaled : 0) : -1;
  b.hold(make_node(Op::Scatter, dtype, {b.nbytes}, {b.value(), value, index}, mode));
  bound(b);
}

NodeRef check_nonzero(const NodeRef& divisor, int msg) {
  check(is_integral(divisor->dtype), "check_nonzero of a non-integer value");
  return make_node(Op::Check, divisor->dtype, divisor->shape, {divisor},
                   CheckArg{0, false, msg, CheckKind::NonZero});
}

NodeRef check_nonnegative(const NodeRef& value, int msg) {
  check(is_floating(value->dtype), "check_nonnegative of a non-float value");
  return make_node(Op::Check, value->dtype, value->shape, {value},
                   CheckArg{0, false, msg, CheckKind::NonNegative});
}

NodeRef check_index(const NodeRef& index, int64_t size, bool wrap, int msg) {
  check(index->dtype == DType::Int64, "check_index of a non-Int64 value");
  return make_node(Op::Check, DType::Int64, index->shape, {index}, CheckArg{size, wrap, msg});
}

std::vector<NodeRef> extern_call(std::shared_ptr<ExternCall> call, std::vector<NodeRef> inputs) {
  std::vector<NodeRef> outs;
  for (size_t k = 0; k < call->out_nbytes.size(); ++k)
    outs.push_back(make_node(Op::Extern, DType::UInt8, {call->out_nbytes[k]}, inputs,
                             std::make_shared<ExternArg>(ExternArg{call, int(k)})));
  return outs;
}

void set_value(Buffer& b, const NodeRef& flat) {
  check(flat->shape == Shape{b.nbytes}, "set_value of a value of another size");
  b.hold(flat);
}

void write_host(Buffer& b, const void* src, size_t nbytes) {
  auto mem = allocate_memory(size_t(b.nbytes));
  std::memcpy(mem->data, src, std::min(nbytes, size_t(b.nbytes)));
  b.hold(make_data(std::move(mem)));
}

// NOTE [Recent constants]: a Python number in an op (`x + 1`, `y * 0.5`) is a Const node
// that died with the op's result, so a loop made, interned, erased and freed it again
// each time (a twentieth of a tiny op's instructions). The last few constants made on a
// thread stay alive here, and a repeat finds them in the intern table. Constants have no
// sources: holding them keeps no buffer's value alive.
NodeRef constant(const Scalar& s, DType dtype, const Shape& shape) {
  struct Recent {
    NodeRef held[8];
    unsigned next = 0;
  };
  static thread_local Recent recent;
  NodeRef n = make_node(Op::Const, dtype, shape, {}, normalize(s, dtype));
  for (const NodeRef& h : recent.held)
    if (h == n) return n;
  recent.held[recent.next++ % 8] = n;
  return n;
}

NodeRef iota(DType dtype, const Shape& shape, int axis) {
  return make_node(Op::Iota, dtype, shape, {}, int64_t(axis));
}

NodeRef rand_uniform(DType dtype, const Shape& shape, uint64_t seed, uint64_t offset) {
  return make_node(Op::RandUniform, dtype, shape, {}, RandArg{seed, offset});
}

NodeRef rand_normal(DType dtype, const Shape& shape, uint64_t seed, uint64_t offset) {
  return make_node(Op::RandNormal, dtype, shape, {}, RandArg{seed, offset});
}

DType result_dtype(Op op, DType in) {
  switch (op) {
    case Op::IsNan: case Op::IsInf: case Op::IsFinite: case Op::LogicalNot:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
    case Op::LogicalAnd: case Op::LogicalOr: case Op::LogicalXor:
      return DType::Bool;
    case Op::Abs: case Op::Real: case Op::Imag:
      return real_part_dtype(in);  // complex -> its parts' dtype
    case Op::Complex:
      return complex_of(in);  // (real part, imaginary part) -> complex
    default:
      return in;
  }
}

NodeRef unary(Op op, const NodeRef& a) {
  check(op_kind(op) == OpKind::Unary && op != Op::Cast, "unary() of a non-unary op");
  return make_node(op, result_dtype(op, a->dtype), a->shape, {a});
}

NodeRef binary(Op op, const NodeRef& a, const NodeRef& b) {
  check(op_kind(op) == OpKind::Binary, "binary() of a non-binary op");
  check(a->shape == b->shape, "binary op on different shapes");
  check(a->dtype == b->dtype, "binary op on different dtypes");
  return make_node(op, result_dtype(op, a->dtype), a->shape, {a, b});
}

NodeRef where(const NodeRef& cond, const NodeRef& a, const NodeRef& b) {
  check(cond->shape == a->shape && a->shape == b->shape, "where on different shapes");
  check(cond->dtype == DType::Bool && a->dtype == b->dtype, "where dtypes");
  return make_node(Op::Where, a->dtype, a->shape, {cond, a, b});
}

NodeRef mul_add(const NodeRef& a, const NodeRef& b, const NodeRef& c) {
  check(a->shape == b->shape && b->shape == c->shape, "mul_add on different shapes");
  check(a->dtype == b->dtype && b->dtype == c->dtype && is_floating(a->dtype) &&
            !is_complex(a->dtype),
        "mul_add of non-floating or mixed dtypes");
  return make_node(Op::MulAdd, a->dtype, a->shape, {a, b, c});
}

void set_complex_to_bool_by_both_parts(bool both) { complex_bool_by_both_parts.store(both); }
bool complex_to_bool_by_both_parts() { return complex_bool_by_both_parts.load(); }

NodeRef cast(const NodeRef& a, DType dtype) {
  if (a->dtype == dtype) return a;
  if (a->op == Op::Const) return constant(std::get<Scalar>(a->arg), dtype, a->shape);
  if (is_complex(a->dtype) && dtype == DType::Bool && complex_to_bool_by_both_parts())
    return binary(Op::Ne, a, constant(Scalar::of_complex(0, 0), a->dtype, a->shape));
  return make_node(Op::Cast, dtype, a->shape, {a});
}

NodeRef reindex(const NodeRef& a, const Shape& shape, IndexMap m) {
  check(m.offs.size() == a->shape.size() && m.dim_of.size() == shape.size(), "reindex rank");
  if (a->op == Op::Const) return constant(std::get<Scalar>(a->arg), a->dtype, shape);
  if (a->op == Op::Load) {
    const View& v = a->view();
    View out{shape, Shape(shape.size(), 0), v.offset};
    for (size_t k = 0; k < m.offs.size(); ++k) out.offset += m.offs[k] * v.strides[k];
    for (size_t j = 0; j < shape.size(); ++j)
      if (m.dim_of[j] >= 0) out.strides[j] = m.mult[j] * v.strides[m.dim_of[j]];
    return make_node(Op::Load, a->dtype, shape, {a->src[0]}, out);
  }
  if (a->op == Op::Reindex) {
    const IndexMap& in = std::get<IndexMap>(a->arg);
    IndexMap c;
    c.offs = in.offs;
    for (size_t k = 0; k < in.dim_of.size(); ++k)
      if (in.dim_of[k] >= 0) c.offs[in.dim_of[k]] += in.mult[k] * m.offs[k];
    for (size_t j = 0; j < shape.size(); ++j) {
      int k = m.dim_of[j];
      bool maps = k >= 0 && in.dim_of[k] >= 0;
      c.dim_of.push_back(maps ? in.dim_of[k] : -1);
      c.mult.push_back(maps ? in.mult[k] * m.mult[j] : 0);
    }
    return make_node(Op::Reindex, a->dtype, shape, {a->src[0]}, std::move(c));
  }
  return make_node(Op::Reindex, a->dtype, shape, {a}, std::move(m));
}

NodeRef expand(const NodeRef& a, const Shape& shape) {
  if (a->shape == shape) return a;
  return reindex(a, shape, broadcast_map(a->shape, shape));
}

namespace {

// Whether a reduction of `a` over `axes` reads columns: the first load below a (through
// elementwise ops) has its smallest stride along a kept dim, so each of the few outputs
// reads its elements strided and they share every row.
bool reads_columns(const Node* a, const std::vector<int>& axes) {
  for (int depth = 0; depth < 8 && a; ++depth) {
    if (a->op == Op::Load) {
      const View& v = a->view();
      int best = -1;
      for (int d = 0; d < int(v.sizes.size()); ++d)
        if (v.sizes[d] > 1 && v.strides[d] != 0 &&
            (best < 0 || std::abs(v.strides[d]) < std::abs(v.strides[best])))
          best = d;
      return best >= 0 && std::find(axes.begin(), axes.end(), best) == axes.end();
    }
    const OpKind k = op_kind(a->op);
    if (k != OpKind::Unary && k != OpKind::Binary && k != OpKind::Ternary) return false;
    const Node* next = nullptr;
    for (const NodeRef& s : a->src)
      if (s->shape == a->shape && op_kind(s->op) != OpKind::Leaf) {
        next = s.get();
        break;
      }
    a = next;
  }
  return false;
}

}  // namespace

NodeRef reduce(ReduceKind kind, const NodeRef& a, std::vector<int> axes, DType out) {
  Shape shape = a->shape;
  for (int ax : axes) {
    check(ax >= 0 && ax < int(shape.size()), "reduce axis out of range");
    shape[ax] = 1;
  }
  const bool splits = kind == ReduceKind::Sum || kind == ReduceKind::Prod ||
                      kind == ReduceKind::Max || kind == ReduceKind::Min ||
                      kind == ReduceKind::Any || kind == ReduceKind::All;
  if (splits && numel(a->shape) >= kSplitReduceMin &&  // NOTE [Split reductions]
      (numel(shape) == 1 || (numel(shape) <= kSplitColumnsMax && reads_columns(a.get(), axes)))) {
    int k = -1;  // the outermost reduced dim the split divides
    for (int ax : axes)
      if (a->shape[ax] % kSplitReduce == 0 && (k < 0 || ax < k)) k = ax;
    if (k >= 0) {
      Shape cut;  // the input's dims with dim k as (kSplitReduce, size / kSplitReduce)
      IndexMap m;
      m.offs.assign(a->shape.size(), 0);
      for (int j = 0; j < int(a->shape.size()); ++j) {
        if (j == k) {
          cut.push_back(kSplitReduce);
          m.dim_of.push_back(k);
          m.mult.push_back(a->shape[k] / kSplitReduce);
        }
        cut.push_back(j == k ? a->shape[k] / kSplitReduce : a->shape[j]);
        m.dim_of.push_back(j);
        m.mult.push_back(1);
      }
      std::vector<int> first;  // every reduced dim but the split one
      for (int ax : axes) first.push_back(ax < k ? ax : ax + 1);
      Shape part_shape = cut;
      for (int ax : first) part_shape[ax] = 1;
      NodeRef parts = make_node(Op::Reduce, out, part_shape, {reindex(a, cut, std::move(m))},
                                ReduceArg{kind, std::move(first)});
      Shape all_shape = part_shape;  // the outputs, with the cut dims reduced
      all_shape[size_t(k)] = 1;
      NodeRef all = make_node(Op::Reduce, out, all_shape, {parts}, ReduceArg{kind, {k}});
      IndexMap drop;  // back to the input's rank
      drop.offs.assign(cut.size(), 0);
      for (int j = 0; j < int(shape.size()); ++j) {
        drop.dim_of.push_back(j < k ? j : j + 1);
        drop.mult.push_back(1);
      }
      return reindex(all, shape, std::move(drop));
    }
  }
  return make_node(Op::Reduce, out, shape, {a}, ReduceArg{kind, std::move(axes)});
}

void make_cohort(const std::vector<NodeRef>& members) {
  for (const NodeRef& m : members) {
    check(m->shape == members[0]->shape, "cohort members differ in shape");
    auto& c = m->cohort;
    c.erase(std::remove_if(c.begin(), c.end(), [](const auto& w) { return w.expired(); }), c.end());
    for (const NodeRef& other : members) {
      bool known = other == m;
      for (const auto& w : c) known |= w.lock() == other;
      if (!known) c.push_back(other);
    }
  }
}

NodeRef scan(ReduceKind kind, const NodeRef& a, int axis, std::optional<DType> out) {
  check(axis >= 0 && axis < int(a->shape.size()), "scan axis out of range");
  return make_node(Op::Scan, out.value_or(a->dtype), a->shape, {a}, ReduceArg{kind, {axis}});
}

}  // namespace loom
