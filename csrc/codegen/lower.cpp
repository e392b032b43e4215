#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "codegen/kernel.h"

namespace loom {

namespace {

void add_term(Affine& a, int var, int64_t coef) {
  if (coef == 0) return;
  if (int(a.coef.size()) <= var) a.coef.resize(var + 1, 0);
  a.coef[var] += coef;
}

void add_scaled(Affine& a, const Affine& b, int64_t m) {
  a.c += b.c * m;
  for (size_t v = 0; v < b.coef.size(); ++v) add_term(a, int(v), b.coef[v] * m);
}

Affine var_affine(int var) {
  Affine a;
  add_term(a, var, 1);
  return a;
}

std::string env_key(const std::vector<Affine>& env) {
  std::ostringstream os;
  for (const auto& a : env) {
    os << a.c;
    for (size_t v = 0; v < a.coef.size(); ++v)
      if (a.coef[v]) os << "," << v << ":" << a.coef[v];
    os << ";";
  }
  return os.str();
}

struct Lowerer {
  LKernel k;
  std::map<std::pair<const Node*, std::string>, int> memo;
  bool parametric = false;
  std::vector<const Node*> self_flats;

  int slot(int64_t v) {
    k.slot_values.push_back(v);
    return int(k.slot_values.size()) - 1;
  }

  int new_var(int64_t size, bool output) {
    k.var_size.push_back(size);
    k.is_output_var.push_back(output);
    return int(k.var_size.size()) - 1;
  }

  // One output loop per dim of `out` but `skip`, outermost-stride first so that the inner
  // loop writes contiguously; returns each dim's index.
  std::vector<Affine> output_env(const View& out, int skip) {
    std::vector<int> order(out.sizes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return out.strides[a] > out.strides[b]; });
    std::vector<Affine> env(out.sizes.size());
    for (int d : order)
      if (d != skip) env[d] = var_affine(new_var(out.sizes[d], true));
    return env;
  }

  // Whether some Check lies below a reduction: the renderer emits a node where it is first
  // needed, which may be inside the loop of a reduction that shares it with nodes outside
  // (lowered once for both), so the flag comes from the graph, not from where lowering
  // met the Check first.
  LKernel finish() {
    std::vector<bool> under(k.nodes.size());
    for (size_t i = k.nodes.size(); i-- > 0;) {
      const LNode& n = k.nodes[i];
      if (n.op == Op::Check && under[i]) k.check_in_reduce = true;
      for (int s : n.src) under[size_t(s)] = under[size_t(s)] || under[i] || n.op == Op::Reduce;
    }
    return std::move(k);
  }

  int add(LNode n) {
    k.nodes.push_back(std::move(n));
    return int(k.nodes.size()) - 1;
  }

  int param_for(const std::shared_ptr<Memory>& mem, DType dtype) {
    for (size_t p = 0; p < k.params.size(); ++p)
      if (k.params[p] == mem && k.param_dtype[p] == dtype) return int(p);
    k.params.push_back(mem);
    k.param_dtype.push_back(dtype);
    return int(k.params.size()) - 1;
  }

  int lower(const NodeRef& n, const std::vector<Affine>& env) {
    // A constant is the same wherever it is read: one node, so that expressions over it
    // (the summands of joint reductions, whose loop variables differ) stay alike.
    auto key = std::make_pair(n.get(), n->op == Op::Const ? std::string() : env_key(env));
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
    LNode ln{n->op, n->dtype, {}, n->arg};
    switch (n->op) {
      case Op::Load: {
        const NodeRef& flat = n->src[0];
        const View& v = n->view();
        bool self = std::find(self_flats.begin(), self_flats.end(), flat.get()) != self_flats.end();
        if (!flat->realized && !self)
          throw std::logic_error("loom: kernel load of unrealized storage");
        ln.param = self ? 0 : param_for(flat->realized, n->dtype);
        if (self && n->dtype != k.out_dtype)
          throw std::logic_error("loom: batched load of the output in another dtype");
        ln.index.c = v.offset;
        for (size_t d = 0; d < env.size(); ++d) add_scaled(ln.index, env[d], v.strides[d]);
        if (parametric) {
          ln.slot = slot(ln.index.c);
          ln.index.c = 0;
        }
        break;
      }
      case Op::Gather: {
        const NodeRef& flat = n->src[0];
        if (!flat->realized) throw std::logic_error("loom: kernel gather of unrealized storage");
        ln.param = param_for(flat->realized, n->dtype);
        ln.src.push_back(lower(n->src[1], env));
        break;
      }
      case Op::Check:
        ln.src.push_back(lower(n->src[0], env));
        ln.check = int(k.checks.size());
        k.checks.push_back(std::get<CheckArg>(n->arg).msg);
        break;
      case Op::Const:
        ln.origin = n.get();
        if (parametric) {
          const Scalar& c = std::get<Scalar>(n->arg);
          int64_t bits = c.is_int ? c.i : int64_t(c.f);
          if (is_floating(n->dtype) || is_complex(n->dtype)) {
            double d = c.to_double();
            std::memcpy(&bits, &d, sizeof bits);
          }
          ln.slot = slot(bits);
          if (is_complex(n->dtype)) {  // the imaginary part in the next slot
            std::memcpy(&bits, &c.im, sizeof bits);
            slot(bits);
          }
        }
        break;
      case Op::Iota:
        ln.index = env[n->int_arg()];
        if (parametric) {  // the coordinate's constant part (a setitem loop's arange[i])
          ln.slot = slot(ln.index.c);
          ln.index.c = 0;
        }
        break;
      case Op::RandUniform:
      case Op::RandNormal: {
        ln.origin = n.get();
        Shape st = contiguous_strides(n->shape);
        for (size_t d = 0; d < env.size(); ++d) add_scaled(ln.index, env[d], st[d]);
        if (parametric) {  // seed, and offset with the index's constant part (rand(n)[i])
          const RandArg& r = std::get<RandArg>(n->arg);
          ln.slot = slot(int64_t(r.seed));
          slot(int64_t(r.offset + uint64_t(ln.index.c)));
          ln.index.c = 0;
        }
        break;
      }
      case Op::Reindex: {
        const IndexMap& m = std::get<IndexMap>(n->arg);
        std::vector<Affine> inner(m.offs.size());
        for (size_t d = 0; d < m.offs.size(); ++d) inner[d].c = m.offs[d];
        for (size_t j = 0; j < env.size(); ++j)
          if (m.dim_of[j] >= 0) add_scaled(inner[m.dim_of[j]], env[j], m.mult[j]);
        int r = lower(n->src[0], inner);
        memo[key] = r;
        return r;
      }
      case Op::Reduce: {
        std::vector<Affine> inner = env;
        const Shape& in = n->src[0]->shape;
        for (int ax : n->reduce_arg().axes) {
          int var = new_var(in[ax], false);
          ln.vars.push_back(var);
          inner[ax] = var_affine(var);
        }
        ln.src.push_back(lower(n->src[0], inner));
        break;
      }
      case Op::Scan:
        throw std::logic_error("loom: a scan must be the whole kernel");
      default:
        if (op_kind(n->op) == OpKind::Flat || n->op == Op::Param)
          throw std::logic_error(std::string("loom: cannot lower ") + op_name(n->op));
        for (const auto& s : n->src) ln.src.push_back(lower(s, env));
    }
    int r = add(std::move(ln));
    memo[key] = r;
    return r;
  }
};

}  // namespace

LKernel lower_store(const View& out, DType dtype, const NodeRef& value,
                    const std::shared_ptr<Memory>& out_mem, const std::vector<ExtraStore>& extra) {
  Lowerer L;
  L.k.out_dtype = dtype;
  L.param_for(out_mem, dtype);
  int scan_axis = value->op == Op::Scan ? value->reduce_arg().axes[0] : -1;
  std::vector<Affine> env = L.output_env(out, scan_axis);
  if (scan_axis >= 0) {
    L.k.scan_var = L.new_var(out.sizes[scan_axis], true);
    env[scan_axis] = var_affine(L.k.scan_var);
  }
  L.k.out_index.c = out.offset;
  for (size_t d = 0; d < env.size(); ++d) add_scaled(L.k.out_index, env[d], out.strides[d]);
  if (scan_axis >= 0) {
    LNode ln{Op::Scan, value->dtype, {L.lower(value->src[0], env)}, value->arg};
    ln.vars = {L.k.scan_var};
    L.k.root = L.add(std::move(ln));
  } else {
    L.k.root = L.lower(value, env);
  }
  if (!extra.empty() && scan_axis >= 0) throw std::logic_error("loom: a scan kernel with outputs beside it");
  for (const ExtraStore& e : extra) {
    if (e.view.sizes != out.sizes || e.value->shape != value->shape)
      throw std::logic_error("loom: a kernel's outputs differ in shape");
    LOutput o;
    o.dtype = e.dtype;
    o.param = L.param_for(e.mem, e.dtype);
    o.index.c = e.view.offset;
    for (size_t d = 0; d < env.size(); ++d) add_scaled(o.index, env[d], e.view.strides[d]);
    o.root = L.lower(e.value, env);
    L.k.extra.push_back(std::move(o));
  }
  return L.finish();
}

LKernel lower_batched_store(const View& out, DType dtype, const NodeRef& value,
                            const std::shared_ptr<Memory>& out_mem,
                            const std::vector<const Node*>& self_flats) {
  Lowerer L;
  L.parametric = true;
  L.self_flats = self_flats;
  L.k.batched = true;
  L.k.out_dtype = dtype;
  L.param_for(out_mem, dtype);
  std::vector<Affine> env = L.output_env(out, -1);
  L.k.out_slot = L.slot(out.offset);
  for (size_t d = 0; d < env.size(); ++d) add_scaled(L.k.out_index, env[d], out.strides[d]);
  L.k.root = L.lower(value, env);
  return L.finish();
}

namespace {
bool same_affine(const Affine& a, const Affine& b) {
  if (a.c != b.c) return false;
  const size_t n = std::max(a.coef.size(), b.coef.size());
  for (size_t v = 0; v < n; ++v) {
    const int64_t x = v < a.coef.size() ? a.coef[v] : 0, y = v < b.coef.size() ? b.coef[v] : 0;
    if (x != y) return false;
  }
  return true;
}
}  // namespace

bool lkernels_alike(const LKernel& a, const LKernel& b) {
  if (a.var_size != b.var_size || a.out_dtype != b.out_dtype ||
      !same_affine(a.out_index, b.out_index) || a.params != b.params ||
      a.param_dtype != b.param_dtype || a.nodes.size() != b.nodes.size())
    return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const LNode &x = a.nodes[i], &y = b.nodes[i];
    if (x.op != y.op || x.dtype != y.dtype || x.param != y.param || x.slot != y.slot ||
        x.src != y.src || !same_affine(x.index, y.index))
      return false;
    const bool slotted_arg = x.op == Op::Const || x.op == Op::Load || x.op == Op::RandUniform ||
                             x.op == Op::RandNormal;
    if (!slotted_arg && !(x.arg == y.arg)) return false;
  }
  return true;
}

LKernel lower_scatter(DType dtype, const NodeRef& value, const NodeRef& index, int combine,
                      const std::shared_ptr<Memory>& out_mem) {
  Lowerer L;
  L.k.out_dtype = dtype;
  L.k.combine = combine;
  L.param_for(out_mem, dtype);
  std::vector<Affine> env;
  for (int64_t size : index->shape) env.push_back(var_affine(L.new_var(size, true)));
  L.k.out_dyn = L.lower(index, env);
  L.k.root = L.lower(value, env);
  return L.finish();
}

// NOTE [Rebased buffers]: a loop over time steps (an RNN's x[t], a decoder's cache[t] = k)
// reads and writes the same shapes at a new offset each step. With offsets in the source,
// each step compiled a kernel of its own (two tiers: 200 steps of a small RNN took 1.4 s,
// then 5 s more when they were optimized, for an epoch that runs in 5 ms). Each buffer is
// now passed from the smallest offset the kernel reads or writes it at, and its indices
// are relative to that: offsets between two accesses of one buffer stay constants (the
// vectorizer pairs x[..., ::2] with x[..., 1::2]) and the source of every step is the same.
// Plans keep their offsets in their keys, so only the compile is shared.
std::vector<int64_t> rebase_params(LKernel& k) {
  const size_t np = k.params.size();
  std::vector<int64_t> base(np, INT64_MAX);
  std::vector<bool> fixed(np, k.batched);
  if (k.out_dyn >= 0) fixed[0] = true;
  std::vector<std::pair<int, Affine*>> uses;
  if (k.out_dyn < 0 && np > 0) uses.emplace_back(0, &k.out_index);
  for (LOutput& o : k.extra) uses.emplace_back(o.param, &o.index);
  for (LNode& n : k.nodes) {
    if (n.op == Op::Load) uses.emplace_back(n.param, &n.index);
    if (n.op == Op::Gather) fixed[size_t(n.param)] = true;
  }
  for (const auto& [p, a] : uses) base[size_t(p)] = std::min(base[size_t(p)], a->c);
  for (size_t p = 0; p < np; ++p)
    if (fixed[p] || base[p] == INT64_MAX || base[p] < 0 || !k.params[p]) base[p] = 0;
  for (const auto& [p, a] : uses) a->c -= base[size_t(p)];
  return base;
}

void collapse_loops(LKernel& k) {
  int nv = int(k.var_size.size());
  std::vector<Affine*> idx{&k.out_index};
  for (auto& o : k.extra) idx.push_back(&o.index);
  for (auto& n : k.nodes)
    if (n.op == Op::Load || n.op == Op::Iota || n.op == Op::RandUniform ||
        n.op == Op::RandNormal)
      idx.push_back(&n.index);
  for (auto* a : idx) a->coef.resize(nv, 0);
  // Groups of loops that may merge: the output loops (bar a scan's), each reduce's.
  std::vector<std::vector<int>> groups(1);
  for (int v = 0; v < nv; ++v)
    if (k.is_output_var[v] && v != k.scan_var) groups[0].push_back(v);
  for (auto& n : k.nodes)
    if (n.op == Op::Reduce) groups.push_back(n.vars);
  for (auto& g : groups) {
    std::vector<int> live;
    for (int v : g)
      if (k.var_size[v] != 1) live.push_back(v);
    if (live.empty()) continue;
    int inner = live.back();
    for (int p = int(live.size()) - 2; p >= 0; --p) {
      int outer = live[p];
      bool ok = std::all_of(idx.begin(), idx.end(), [&](Affine* a) {
        return a->coef[outer] == a->coef[inner] * k.var_size[inner];
      });
      if (!ok) {
        inner = outer;
        continue;
      }
      for (auto* a : idx) a->coef[outer] = 0;
      k.var_size[inner] *= k.var_size[outer];
      k.var_size[outer] = 1;
    }
  }
  // Drop loops of size 1 (their variable is always 0).
  std::vector<int> remap(nv, -1);
  int m = 0;
  for (int v = 0; v < nv; ++v)
    if (k.var_size[v] != 1 || v == k.scan_var) remap[v] = m++;
  auto squeeze = [&](auto& vec) {
    using T = typename std::decay_t<decltype(vec)>::value_type;
    std::vector<T> out;
    for (int v = 0; v < nv; ++v)
      if (remap[v] >= 0) out.push_back(vec[v]);
    vec = std::move(out);
  };
  for (auto* a : idx) squeeze(a->coef);
  for (auto& n : k.nodes) {
    std::vector<int> vars;
    for (int v : n.vars)
      if (remap[v] >= 0) vars.push_back(remap[v]);
    n.vars = std::move(vars);
  }
  squeeze(k.var_size);
  std::vector<bool> out_flags;
  for (int v = 0; v < nv; ++v)
    if (remap[v] >= 0) out_flags.push_back(k.is_output_var[v]);
  k.is_output_var = std::move(out_flags);
  if (k.scan_var >= 0) k.scan_var = remap[k.scan_var];
}

namespace {

// The loop variables each node's value depends on (a reduction's value not on its own).
std::vector<std::vector<bool>> loop_deps(const LKernel& k) {
  const int nv = int(k.var_size.size());
  std::vector<std::vector<bool>> deps(k.nodes.size(), std::vector<bool>(nv));
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const LNode& n = k.nodes[i];
    std::vector<bool>& d = deps[i];
    if (n.op == Op::Load || n.op == Op::Iota || n.op == Op::RandUniform ||
        n.op == Op::RandNormal)
      for (int v = 0; v < nv && v < int(n.index.coef.size()); ++v) d[v] = n.index.coef[v] != 0;
    for (int s : n.src)
      for (int v = 0; v < nv; ++v) d[v] = d[v] || deps[s][v];
    if (n.op == Op::Reduce)
      for (int v : n.vars) d[v] = false;
  }
  return deps;
}

}  // namespace

bool recomputes_reductions(const LKernel& k) {
  if (place_reductions(k).ok) return false;
  const int nv = int(k.var_size.size());
  std::vector<std::vector<bool>> deps = loop_deps(k);
  std::vector<bool> reads(k.nodes.size());
  for (size_t r = 0; r < k.nodes.size(); ++r) {
    if (k.nodes[r].op != Op::Reduce) continue;
    // The nodes that read reduction r, and whether one varies along a loop that r does not.
    std::fill(reads.begin(), reads.end(), false);
    reads[r] = true;
    for (size_t i = r + 1; i < k.nodes.size(); ++i) {
      for (int s : k.nodes[i].src) reads[i] = reads[i] || reads[size_t(s)];
      if (!reads[i]) continue;
      for (int v = 0; v < nv; ++v)
        if (deps[i][v] && !deps[r][v]) return true;
    }
  }
  return false;
}

// NOTE [Whole reductions]: a reduction that no output loop varies (a softmax or layer norm
// over a single row, x - x.mean()) was stored by a kernel of its own and read back by the
// kernel storing the output: three kernels for a one-row softmax, each costing more host
// time (4-5 us) than its work. In a kernel whose other work is small (its output and its
// other reductions: at most kWholeReduceMaxWork loop points) it is now computed once,
// before the output loops, and the kernel runs as one call on one thread (make_plan in
// runtime/launch.cpp): split across threads, each part would compute it again. Larger
// kernels keep the separate ones, whose output pass (or a split reduction's partials,
// NOTE [Split reductions]) runs across threads.
ReducePlacement place_reductions(const LKernel& k) {
  const int nv = int(k.var_size.size());
  std::vector<int> outs;
  int64_t out_numel = 1;
  for (int v = 0; v < nv; ++v)
    if (k.is_output_var[v] && v != k.scan_var) {
      outs.push_back(v);
      out_numel *= k.var_size[v];
    }
  const std::vector<std::vector<bool>> deps = loop_deps(k);
  // The loop variables of the reductions around each node (users come after sources).
  std::vector<std::vector<bool>> around(k.nodes.size(), std::vector<bool>(nv));
  for (size_t i = k.nodes.size(); i-- > 0;) {
    const LNode& n = k.nodes[i];
    for (int s : n.src) {
      for (int v = 0; v < nv; ++v) around[s][v] = around[s][v] || around[i][v];
      if (n.op == Op::Reduce)
        for (int v : n.vars) around[s][v] = true;
    }
  }
  ReducePlacement p;
  p.level.assign(k.nodes.size(), -1);
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const LNode& n = k.nodes[i];
    const std::vector<bool>& d = deps[i];
    if (n.op != Op::Reduce) continue;
    // A scan's body is computed at every step of the scan: a reduction there that does not
    // depend on the step (cumsum(x / x.sum())) would be recomputed at each one.
    if (k.scan_var >= 0 && !d[k.scan_var]) p.ok = false;
    bool nested = false;
    for (int v = 0; v < nv; ++v) nested |= d[v] && !k.is_output_var[v];
    if (nested) {
      // Inside another reduction's loop: computed per iteration of every loop around it,
      // output loops and the loops of the reductions around it (a layer norm's row mean
      // under a sum over a column would be recomputed for every column).
      p.level[i] = kNestedReduction;
      for (int v : outs) p.ok &= bool(d[v]);
      for (int v = 0; v < nv; ++v) p.ok &= !around[i][v] || bool(d[v]);
      continue;
    }
    int level = -1;
    for (int j = 0; j < int(outs.size()); ++j)
      if (d[outs[j]]) level = j;
    for (int j = 0; j <= level; ++j) p.ok &= bool(d[outs[j]]);
    if (level < 0 && !outs.empty()) p.whole = true;
    p.level[i] = level;
  }
  if (p.whole) {
    // The work the kernel would split across threads without them: its output and its
    // other reductions' loops (a split reduction's partials, NOTE [Split reductions]).
    int64_t work = out_numel;
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      if (k.nodes[i].op != Op::Reduce || p.level[i] == -1) continue;
      int64_t points = 1;
      for (int v = 0; v < nv; ++v)
        if (deps[i][v] || std::count(k.nodes[i].vars.begin(), k.nodes[i].vars.end(), v))
          points *= k.var_size[v];
      work += points;
    }
    p.ok &= k.scan_var < 0 && !k.batched && k.out_dyn < 0 && work <= kWholeReduceMaxWork;
  }
  return p;
}

std::string lkernel_str(const LKernel& k) {
  std::ostringstream os;
  os << "loops:";
  for (size_t v = 0; v < k.var_size.size(); ++v)
    os << " " << (k.is_output_var[v] ? "x" : "r") << v << "<" << k.var_size[v];
  os << "\n";
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const LNode& n = k.nodes[i];
    os << "  v" << i << " = " << op_name(n.op) << " " << dtype_name(n.dtype);
    for (int s : n.src) os << " v" << s;
    if (n.param >= 0) os << " p" << n.param;
    if (n.check >= 0) os << " check" << n.check;
    os << "\n";
  }
  for (const LOutput& o : k.extra) os << "  out p" << o.param << " = v" << o.root << "\n";
  return os.str();
}

}  // namespace loom
