#include "index_fuzz.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>
#include <vector>

#include "codegen/kernel.h"
#include "core/graph.h"
#include "core/layout.h"

namespace loom::fuzz {

namespace {

// Decodes the fuzzer's bytes into choices; past the end every choice is its lowest value.
// Points to evaluate at come from a PRNG seeded by the input, so a case is reproducible.
struct Input {
  const uint8_t* p;
  size_t n;
  uint64_t rng = 0x243f6a8885a308d3ULL;

  int64_t pick(int64_t lo, int64_t hi) {  // in [lo, hi]
    uint64_t v = 0;
    if (n) {
      v = *p++;
      --n;
      rng = (rng ^ v) * 0x100000001b3ULL;
    }
    return lo + int64_t(v % uint64_t(hi - lo + 1));
  }
  int64_t random(int64_t bound) {  // splitmix64, in [0, bound)
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return int64_t((z ^ (z >> 31)) % uint64_t(bound));
  }
};

struct Failure {
  std::ostringstream os;
  bool failed = false;
  template <class T>
  Failure& operator<<(const T& v) {
    failed = true;
    os << v;
    return *this;
  }
};

std::string str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  return os.str() + "]";
}

int64_t address(const View& v, const Shape& p) {
  int64_t a = v.offset;
  for (size_t k = 0; k < p.size(); ++k) a += p[k] * v.strides[k];
  return a;
}

// The coordinates of row-major position t in `sizes`.
Shape unravel(int64_t t, const Shape& sizes) {
  Shape p(sizes.size());
  for (int64_t k = int64_t(sizes.size()) - 1; k >= 0; --k) {
    p[k] = t % sizes[k];
    t /= sizes[k];
  }
  return p;
}

// Positions to evaluate at: all of a small space, random ones of a large one.
std::vector<int64_t> positions(Input& in, int64_t total) {
  std::vector<int64_t> ts;
  if (total <= 512) {
    for (int64_t t = 0; t < total; ++t) ts.push_back(t);
  } else {
    for (int i = 0; i < 128; ++i) ts.push_back(in.random(total));
  }
  return ts;
}

// A view with non-negative strides, as the CPU device makes.
View random_view(Input& in) {
  View v;
  int nd = int(in.pick(0, 4));
  for (int d = 0; d < nd; ++d) {
    v.sizes.push_back(in.pick(0, 7) == 0 ? 0 : in.pick(1, 4));
    v.strides.push_back(in.pick(0, 10));
  }
  v.offset = in.pick(0, 5);
  return v;
}

void check_layout(Input& in, Failure& f) {
  View v = random_view(in);
  int64_t n = v.numel();
  std::vector<int64_t> addr;
  for (int64_t t = 0; t < n; ++t) addr.push_back(address(v, unravel(t, v.sizes)));
  std::string where = " of view " + v.str();
  int64_t hi = addr.empty() ? 0 : *std::max_element(addr.begin(), addr.end()) + 1;
  if (extent(v) != hi) return void(f << "extent " << extent(v) << " != " << hi << where);
  bool contiguous = true;
  for (int64_t t = 0; t < n; ++t) contiguous &= addr[t] == v.offset + t;
  if (is_contiguous(v) != contiguous) return void(f << "is_contiguous wrong" << where);
  std::set<int64_t> distinct(addr.begin(), addr.end());
  if (is_non_overlapping(v) && int64_t(distinct.size()) != n)
    return void(f << "is_non_overlapping but elements repeat" << where);
  for (int64_t storage : {n, n + 1, n - 1}) {
    if (storage <= 0 || !is_dense_cover(v, storage)) continue;
    bool cover = int64_t(distinct.size()) == n && n == storage && *distinct.begin() == 0 &&
                 *distinct.rbegin() == storage - 1;
    if (!cover) return void(f << "is_dense_cover(" << storage << ") but it is not" << where);
  }
}

// A permuted contiguous layout over its whole storage.
View random_store(Input& in) {
  int nd = int(in.pick(1, 4));
  Shape sizes;
  for (int d = 0; d < nd; ++d) sizes.push_back(in.pick(1, 5));
  std::vector<int> order(nd);
  std::iota(order.begin(), order.end(), 0);
  for (int i = nd - 1; i > 0; --i) std::swap(order[i], order[in.pick(0, i)]);
  View s{sizes, Shape(nd), 0};
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; --i) {
    s.strides[order[i]] = stride;
    stride *= sizes[order[i]];
  }
  return s;
}

// A view inside [0, numel) of `store`'s storage, mostly walking multiples of its strides
// (what slicing, flipping, diagonals and broadcasts of it give), sometimes not.
bool random_load(Input& in, const View& store, View* out) {
  int64_t n = store.numel();
  View v;
  int nd = int(in.pick(0, 4));
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < nd; ++d) {
    int k = int(in.pick(0, store.ndim() - 1));
    int64_t st = store.strides[k] * in.pick(-2, 2);
    if (in.pick(0, 3) == 0) st += in.pick(-1, 1);
    int64_t size = in.pick(0, 9) == 0 ? 0 : in.pick(1, std::max<int64_t>(store.sizes[k], 1));
    v.sizes.push_back(size);
    v.strides.push_back(st);
    if (size > 0) (st > 0 ? hi : lo) += st * (size - 1);
  }
  if (v.numel() == 0) {
    lo = hi = 0;
  }
  if (hi - lo >= n) return false;
  v.offset = -lo + in.pick(0, n - 1 - (hi - lo));
  *out = v;
  return true;
}

void check_compose_through(Input& in, Failure& f) {
  View store = random_store(in);
  if (!is_dense_cover(store, store.numel())) return void(f << "store " << store.str() << " not dense");
  View load;
  if (!random_load(in, store, &load)) return;
  std::optional<IndexMap> m = compose_through(store, load);
  if (!m) return;
  std::string where = " composing load " + load.str() + " through store " + store.str();
  if (int64_t(m->offs.size()) != store.ndim() || int64_t(m->dim_of.size()) != load.ndim() ||
      m->mult.size() != m->dim_of.size())
    return void(f << "map of the wrong rank" << where);
  for (int64_t t : positions(in, load.numel())) {
    Shape p = unravel(t, load.sizes);
    Shape q = m->offs;
    for (size_t j = 0; j < p.size(); ++j)
      if (m->dim_of[j] >= 0) q[m->dim_of[j]] += m->mult[j] * p[j];
    for (size_t k = 0; k < q.size(); ++k)
      if (q[k] < 0 || q[k] >= store.sizes[k])
        return void(f << "store coordinate " << str(q) << " out of range at " << str(p) << where);
    if (address(store, q) != address(load, p))
      return void(f << "element " << address(store, q) << " != " << address(load, p) << " at "
                    << str(p) << where);
  }
}

// A valid map from coordinates of shape `to` (chosen here) into shape `from` (no zero sizes).
IndexMap random_map(Input& in, const Shape& from, Shape* to) {
  IndexMap m;
  Shape lo, hi;
  for (int64_t s : from) {
    m.offs.push_back(in.pick(0, s - 1));
    lo.push_back(m.offs.back());
    hi.push_back(m.offs.back());
  }
  to->clear();
  int nd = int(in.pick(0, 4));
  for (int j = 0; j < nd; ++j) {
    if (from.empty() || in.pick(0, 3) == 0) {  // a broadcast dim
      m.dim_of.push_back(-1);
      m.mult.push_back(0);
      to->push_back(in.pick(1, 4));
      continue;
    }
    int k = int(in.pick(0, int64_t(from.size()) - 1));
    int64_t t = in.pick(0, 3);
    t = t < 2 ? t - 2 : t - 1;  // -2, -1, 1, 2
    int64_t room = t > 0 ? (from[k] - 1 - hi[k]) / t : lo[k] / -t;
    int64_t size = in.pick(1, room + 1);
    (t > 0 ? hi : lo)[k] += t * (size - 1);
    m.dim_of.push_back(k);
    m.mult.push_back(t);
    to->push_back(size);
  }
  return m;
}

Shape map_point(const IndexMap& m, const Shape& p) {
  Shape q = m.offs;
  for (size_t j = 0; j < p.size(); ++j)
    if (m.dim_of[j] >= 0) q[m.dim_of[j]] += m.mult[j] * p[j];
  return q;
}

void check_reindex(Input& in, Failure& f) {
  View base = random_view(in);
  for (auto& s : base.sizes) s = std::max<int64_t>(s, 1);
  Buffer b(std::max<int64_t>(extent(base), 1) * 4);
  NodeRef load = read(b, DType::Float32, base);
  bool through_load = in.pick(0, 1) == 0;
  NodeRef start = through_load ? load : unary(Op::Neg, load);
  NodeRef node = start;
  std::vector<IndexMap> maps;
  int steps = int(in.pick(1, 3));
  for (int i = 0; i < steps; ++i) {
    Shape to;
    maps.push_back(random_map(in, node->shape, &to));
    node = reindex(node, to, maps.back());
    if (node->shape != to) return void(f << "reindex result shape " << str(node->shape));
  }
  std::string where = " after " + std::to_string(steps) + " reindexes of " + base.str();
  if (through_load && node->op != Op::Load) return void(f << "reindex of a load is not a load" << where);
  if (!through_load && (node->op != Op::Reindex || node->src[0] != start))
    return void(f << "reindexes did not compose into one" << where);
  for (int64_t t : positions(in, numel(node->shape))) {
    Shape p = unravel(t, node->shape);
    Shape q = p;
    for (auto it = maps.rbegin(); it != maps.rend(); ++it) q = map_point(*it, q);
    if (through_load) {
      if (address(node->view(), p) != address(base, q))
        return void(f << "load of " << address(node->view(), p) << " != " << address(base, q)
                      << " at " << str(p) << where);
    } else if (map_point(std::get<IndexMap>(node->arg), p) != q) {
      return void(f << "composed map gives " << str(map_point(std::get<IndexMap>(node->arg), p))
                    << " != " << str(q) << " at " << str(p) << where);
    }
  }
}

// Every index of a kernel at iteration (output position t, reduce position r).
std::vector<int64_t> kernel_indices(const LKernel& k, int reduce_node, int64_t t, int64_t r) {
  const int nv = int(k.var_size.size());
  Shape val(nv, 0), outs, out_sizes;
  for (int v = 0; v < nv; ++v)
    if (k.is_output_var[v]) {
      outs.push_back(v);
      out_sizes.push_back(k.var_size[v]);
    }
  Shape p = unravel(t, out_sizes);
  for (size_t i = 0; i < outs.size(); ++i) val[outs[i]] = p[i];
  if (reduce_node >= 0) {
    const auto& vars = k.nodes[reduce_node].vars;
    Shape sizes;
    for (int v : vars) sizes.push_back(k.var_size[v]);
    Shape q = unravel(r, sizes);
    for (size_t i = 0; i < vars.size(); ++i) val[vars[i]] = q[i];
  }
  std::vector<int64_t> idx;
  auto eval = [&](const Affine& a) {
    int64_t s = a.c;
    for (size_t v = 0; v < a.coef.size(); ++v) s += a.coef[v] * val[v];
    idx.push_back(s);
  };
  eval(k.out_index);
  for (const LNode& n : k.nodes)
    if (n.op == Op::Load) eval(n.index);
  return idx;
}

int64_t group_size(const LKernel& k, int reduce_node, bool output) {
  int64_t s = 1;
  if (output) {
    for (size_t v = 0; v < k.var_size.size(); ++v)
      if (k.is_output_var[v]) s *= k.var_size[v];
  } else if (reduce_node >= 0) {
    for (int v : k.nodes[reduce_node].vars) s *= k.var_size[v];
  }
  return s;
}

void check_collapse(Input& in, Failure& f) {
  LKernel k;
  int n_out = int(in.pick(0, 4)), n_red = int(in.pick(0, 3));
  for (int v = 0; v < n_out + n_red; ++v) {
    k.var_size.push_back(in.pick(0, 3) == 0 ? 1 : in.pick(1, 6));
    k.is_output_var.push_back(v < n_out);
  }
  auto random_affine = [&]() {
    Affine a;
    a.c = in.pick(0, 10);
    a.coef.assign(k.var_size.size(), 0);
    // Mostly a permuted dense layout (mergeable loops), sometimes arbitrary.
    bool dense = in.pick(0, 2) != 0;
    int64_t stride = in.pick(1, 2);
    for (int v = int(k.var_size.size()) - 1; v >= 0; --v) {
      if (dense) {
        a.coef[v] = in.pick(0, 5) == 0 ? 0 : stride;
        stride *= k.var_size[v];
      } else {
        a.coef[v] = in.pick(-3, 6);
      }
    }
    return a;
  };
  k.out_index = random_affine();
  int loads = int(in.pick(1, 3));
  for (int i = 0; i < loads; ++i) {
    LNode n;
    n.op = Op::Load;
    n.dtype = DType::Float32;
    n.index = random_affine();
    k.nodes.push_back(n);
  }
  int reduce_node = -1;
  if (n_red > 0) {
    LNode r;
    r.op = Op::Reduce;
    r.dtype = DType::Float32;
    r.src = {0};
    for (int v = n_out; v < n_out + n_red; ++v) r.vars.push_back(v);
    k.nodes.push_back(r);
    reduce_node = int(k.nodes.size()) - 1;
  }
  LKernel c = k;
  collapse_loops(c);
  std::string where = "\nbefore: " + lkernel_str(k) + "after: " + lkernel_str(c);
  for (bool output : {true, false})
    if (group_size(k, reduce_node, output) != group_size(c, reduce_node, output))
      return void(f << "collapse changed the iteration count" << where);
  int64_t outs = group_size(k, reduce_node, true), reds = group_size(k, reduce_node, false);
  for (int64_t pos : positions(in, outs * reds)) {
    int64_t t = pos / reds, r = pos % reds;
    if (kernel_indices(k, reduce_node, t, r) != kernel_indices(c, reduce_node, t, r))
      return void(f << "indices differ at iteration " << t << "/" << r << where);
  }
}

}  // namespace

std::string index_case(const uint8_t* data, size_t size) {
  Input in{data, size};
  Failure f;
  switch (in.pick(0, 3)) {
    case 0: check_layout(in, f); break;
    case 1: check_compose_through(in, f); break;
    case 2: check_reindex(in, f); break;
    default: check_collapse(in, f); break;
  }
  return f.failed ? f.os.str() : "";
}

}  // namespace loom::fuzz
