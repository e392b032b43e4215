#include "core/known.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "core/memory.h"

namespace loom {

namespace {

using Values = std::vector<int64_t>;

// `x` as dtype `t` holds it: wrapped to its width; a bool is 0 or 1.
int64_t as_dtype(uint64_t x, DType t) {
  switch (t) {
    case DType::Bool:
      return x != 0;
    case DType::UInt8:
      return uint8_t(x);
    case DType::Int8:
      return int8_t(x);
    case DType::Int16:
      return int16_t(x);
    case DType::Int32:
      return int32_t(x);
    default:
      return int64_t(x);
  }
}

template <typename T>
void widen(const char* p, int64_t count, int64_t* out) {
  for (int64_t e = 0; e < count; ++e) {
    T v;
    std::memcpy(&v, p + e * int64_t(sizeof(T)), sizeof(T));
    out[e] = int64_t(v);
  }
}

// `count` elements of dtype t at p, widened to int64 (one loop per dtype).
void read_elements(const char* p, DType t, int64_t count, int64_t* out) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
      return widen<uint8_t>(p, count, out);
    case DType::Int8:
      return widen<int8_t>(p, count, out);
    case DType::Int16:
      return widen<int16_t>(p, count, out);
    case DType::Int32:
      return widen<int32_t>(p, count, out);
    default:
      return widen<int64_t>(p, count, out);
  }
}

// Calls fn(offset, row-major position) for every coordinate c of `shape`, where offset is
// base + sum of c[d] * strides[d], stepped like an odometer rather than recomputed.
template <class F>
void for_each_offset(const Shape& shape, const Shape& strides, int64_t base, F fn) {
  const int64_t n = numel(shape);
  if (n == 0) return;
  const size_t dims = shape.size();
  if (dims == 0) return fn(base, int64_t(0));
  std::vector<int64_t> c(dims, 0);
  const int64_t inner = shape[dims - 1], step = strides[dims - 1];
  int64_t at = base;
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j) fn(at + j * step, i + j);
    for (size_t d = dims - 1; d-- > 0;) {
      at += strides[d];
      if (++c[d] < shape[d]) break;
      at -= shape[d] * strides[d];
      c[d] = 0;
    }
  }
}

// The elements of a storage read as one dtype, and which of them are known.
struct Storage {
  Values v;
  std::vector<uint8_t> known;  // bytes, not bits: set and read per element
};

struct Folder {
  int64_t max_elements;
  int budget;
  // Each node's values once computed (null where unknown), shared by all its readers.
  std::unordered_map<const Node*, std::unique_ptr<const Values>> values;
  std::unordered_map<const Node*, std::optional<Storage>> storages;

  const Values* eval(const NodeRef& n) {
    auto it = values.find(n.get());
    if (it != values.end()) return it->second.get();
    std::optional<Values> r;
    if (--budget >= 0 && is_integral(n->dtype) && numel(n->shape) <= max_elements) r = compute(*n);
    auto& slot = values[n.get()];
    if (r) slot = std::make_unique<const Values>(std::move(*r));
    return slot.get();
  }

  std::optional<Values> compute(const Node& n) {
    const int64_t count = numel(n.shape);
    const DType t = n.dtype;
    Values out(size_t(count), 0);
    switch (op_kind(n.op)) {
      case OpKind::Leaf: {
        if (n.op == Op::Const) {
          const Scalar& s = std::get<Scalar>(n.arg);
          // A float constant is followed only when it is an integer within int64's range
          // (converting others would be undefined).
          if (!s.is_int && (s.im != 0 || !(std::fabs(s.f) < 9.2e18) || std::trunc(s.f) != s.f))
            return std::nullopt;
          std::fill(out.begin(), out.end(), as_dtype(uint64_t(s.is_int ? s.i : int64_t(s.f)), t));
          return out;
        }
        if (n.op != Op::Iota) return std::nullopt;
        Shape unit(n.shape.size(), 0);
        unit[size_t(n.int_arg())] = 1;
        for_each_offset(n.shape, unit, 0, [&](int64_t c, int64_t i) {
          out[size_t(i)] = as_dtype(uint64_t(c), t);
        });
        return out;
      }
      case OpKind::Move: {
        if (n.op == Op::Reindex) {
          const Values* src = eval(n.src[0]);
          if (!src) return std::nullopt;
          const IndexMap& m = std::get<IndexMap>(n.arg);
          const Shape in_strides = contiguous_strides(n.src[0]->shape);
          int64_t base = 0;
          for (size_t k = 0; k < m.offs.size(); ++k) base += m.offs[k] * in_strides[k];
          Shape steps(n.shape.size(), 0);
          for (size_t j = 0; j < steps.size(); ++j)
            if (m.dim_of[j] >= 0) steps[j] = m.mult[j] * in_strides[size_t(m.dim_of[j])];
          for_each_offset(n.shape, steps, base,
                          [&](int64_t at, int64_t i) { out[size_t(i)] = (*src)[size_t(at)]; });
          return out;
        }
        if (n.op != Op::Load) return std::nullopt;
        const std::optional<Storage>& s = storage(n.src[0].get(), t);
        if (!s) return std::nullopt;
        const View& v = n.view();
        bool ok = true;
        const int64_t size = int64_t(s->v.size());
        for_each_offset(n.shape, v.strides, v.offset, [&](int64_t at, int64_t i) {
          if (at < 0 || at >= size || !s->known[size_t(at)])
            ok = false;
          else
            out[size_t(i)] = s->v[size_t(at)];
        });
        if (!ok) return std::nullopt;
        return out;
      }
      case OpKind::Unary:
      case OpKind::Binary:
      case OpKind::Ternary: {
        std::vector<const Values*> in;
        for (const NodeRef& s : n.src) {
          const Values* v = eval(s);
          if (!v || numel(s->shape) != count) return std::nullopt;
          in.push_back(v);
        }
        for (int64_t i = 0; i < count; ++i) {
          auto r = elementwise(n, in, size_t(i));
          if (!r) return std::nullopt;
          out[size_t(i)] = *r;
        }
        return out;
      }
      case OpKind::Scan: {  // a running integer sum (the positions of a mask's true entries)
        const ReduceArg& a = std::get<ReduceArg>(n.arg);
        if (a.kind != ReduceKind::Sum || a.axes.size() != 1) return std::nullopt;
        const Values* src = eval(n.src[0]);
        if (!src || numel(n.src[0]->shape) != count) return std::nullopt;
        const size_t axis = size_t(a.axes[0]);
        int64_t inner = 1;
        for (size_t d = axis + 1; d < n.shape.size(); ++d) inner *= n.shape[d];
        for (int64_t i = 0; i < count; ++i) {
          const bool first = (i / inner) % n.shape[axis] == 0;
          const uint64_t prev = first ? 0 : uint64_t(out[size_t(i - inner)]);
          out[size_t(i)] = as_dtype(prev + uint64_t((*src)[size_t(i)]), t);
        }
        return out;
      }
      default:
        return std::nullopt;
    }
  }

  // One element of an elementwise op on known integer inputs (arithmetic wraps, as the
  // kernels' does).
  static std::optional<int64_t> elementwise(const Node& n, const std::vector<const Values*>& in,
                                            size_t i) {
    const DType t = n.dtype;
    const int64_t a = (*in[0])[i], b = in.size() > 1 ? (*in[1])[i] : 0;
    const uint64_t ua = uint64_t(a), ub = uint64_t(b);
    switch (n.op) {
      case Op::Cast:
        return as_dtype(ua, t);
      case Op::Check:
        return a;  // the bounds are what the caller checks
      case Op::Neg:
        return as_dtype(0 - ua, t);
      case Op::Abs:
        return as_dtype(a < 0 ? 0 - ua : ua, t);
      case Op::LogicalNot:
        return int64_t(a == 0);
      case Op::BitwiseNot:  // of a bool: its negation (`~mask`)
        return t == DType::Bool ? int64_t(a == 0) : as_dtype(~ua, t);
      case Op::Add:
        return as_dtype(ua + ub, t);
      case Op::Sub:
        return as_dtype(ua - ub, t);
      case Op::Mul:
        return as_dtype(ua * ub, t);
      case Op::Maximum:
        return std::max(a, b);
      case Op::Minimum:
        return std::min(a, b);
      case Op::Eq:
        return int64_t(a == b);
      case Op::Ne:
        return int64_t(a != b);
      case Op::Lt:
        return int64_t(a < b);
      case Op::Le:
        return int64_t(a <= b);
      case Op::Gt:
        return int64_t(a > b);
      case Op::Ge:
        return int64_t(a >= b);
      case Op::LogicalAnd:
        return int64_t(a != 0 && b != 0);
      case Op::LogicalOr:
        return int64_t(a != 0 || b != 0);
      case Op::BitAnd:
        return as_dtype(ua & ub, t);
      case Op::BitOr:
        return as_dtype(ua | ub, t);
      case Op::BitXor:
        return as_dtype(ua ^ ub, t);
      case Op::Where:
        return (*in[0])[i] ? (*in[1])[i] : (*in[2])[i];
      default:
        return std::nullopt;
    }
  }

  // A storage's elements as dtype t: realized memory, or a chain of pending stores of
  // known values onto realized or fresh memory (whose elements are unknown until stored).
  const std::optional<Storage>& storage(const Node* flat, DType t) {
    auto it = storages.find(flat);
    if (it != storages.end()) return it->second;
    std::optional<Storage>& r = storages[flat];
    const int64_t count = flat->shape[0] / itemsize(t);
    if (count > max_elements) return r;
    std::vector<const Node*> chain;
    const Node* base = flat;
    for (; !base->realized && base->op == Op::Store; base = base->src[0].get()) {
      if (base->dtype != t || --budget < 0) return r;
      chain.push_back(base);
    }
    Storage s{Values(size_t(count), 0), std::vector<uint8_t>(size_t(count), 0)};
    if (base->realized) {
      await_writes(*base->realized);
      const char* p = static_cast<const char*>(base->realized->data);
      read_elements(p, t, count, s.v.data());
      s.known.assign(size_t(count), 1);
    } else if (base->op != Op::Empty) {
      return r;  // a scatter, an extern call's result
    }
    for (size_t k = chain.size(); k-- > 0;) {
      const View& v = chain[k]->view();
      const Values* vals = eval(chain[k]->src[1]);
      if (!vals) return r;
      for_each_offset(v.sizes, v.strides, v.offset, [&](int64_t at, int64_t i) {
        s.v[size_t(at)] = (*vals)[size_t(i)];
        s.known[size_t(at)] = 1;
      });
    }
    r = std::move(s);
    return r;
  }
};

}  // namespace

std::optional<std::vector<int64_t>> known_values(const NodeRef& v, int64_t max_elements,
                                                 int max_nodes) {
  Folder f{max_elements, max_nodes, {}, {}};
  if (const Values* r = f.eval(v)) return *r;
  return std::nullopt;
}

}  // namespace loom
