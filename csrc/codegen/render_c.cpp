// Pass 3, the C source of a kernel: expressions and the kernel's loops (reductions are in
// render_reduce.cpp). How the loops walk memory is decided in render_tiles.cpp (column,
// scan and transpose tiles) and render_layout.cpp (row caches, prefetch, streaming).
#include "codegen/renderer.h"

namespace loom {

namespace c_render {

std::string var_name(const LKernel& k, int v) {
  return (k.is_output_var[v] ? "x" : "r") + std::to_string(v);
}

std::string index_str(const LKernel& k, const Affine& a) {
  std::string s = std::to_string(a.c) + "LL";
  for (size_t v = 0; v < a.coef.size(); ++v) {
    if (!a.coef[v]) continue;
    s += " + " + var_name(k, int(v));
    if (a.coef[v] != 1) s += " * " + std::to_string(a.coef[v]) + "LL";
  }
  return s;
}

Renderer::Renderer(const LKernel& kernel) : k(kernel) {}

// NOTE [No contraction]: a product and the sum that reads it are rounded apart, as the
// CPU's kernels round each op, never fused into one fma across nodes. A value computed
// again in another kernel must come out with the same bits: amax's gradient compares its
// input, recomputed in the backward, with the max the forward computed, and a mask that
// matched nothing gave a zero gradient (and 0/0 where it divides by the matches). A rule
// that contracted a product read by nothing else in the kernel (as compilers do) gave
// `t1 + t1 * t2` an fma in the forward's kernel and two roundings in a backward kernel that
// read the product again; whether a product is inline or read back from its tensor's
// storage depends on what was realized before, so no rule by kernel can hold. Contracting
// bought nothing measurable (the bench's chain, softmax and layer norm within noise). The
// compilers contract only within one C expression (-ffp-contract=on), which each node's own
// statement is, so the quick and optimized compiles (NOTE [Compile tiers],
// runtime/compiler.cpp) give the same bits too. Where the CPU's kernels compute an fma
// (add and sub with an alpha, addcmul, lerp, layer norm's affine steps, linspace's
// bases), the graph has one node for it (MulAdd), which every kernel computes alike;
// inside the math prelude's functions, products fuse where their formulas say (LOOM_FMAF).

// Emits the statements computing node `id` at this depth; returns its C name.
std::string Renderer::emit(int id, int depth) {
  if (const std::string* s = find(id)) return *s;
  const LNode& n = k.nodes[id];
  std::string name = "v" + std::to_string(id);
  const std::string T = compute_ctype(n.dtype);
  std::string e;
  switch (n.op) {
    case Op::Load:
      e = c_load(n.dtype, "p" + std::to_string(n.param) + "[" + slotted(n.slot, n.index) + "]");
      break;
    case Op::Gather:
      e = c_load(n.dtype, "p" + std::to_string(n.param) + "[" + emit(n.src[0], depth) + "]");
      break;
    case Op::Check: {
      const CheckArg& c = std::get<CheckArg>(n.arg);
      std::string x = emit(n.src[0], depth), size = std::to_string(c.size) + "LL";
      if (c.kind != CheckKind::Bound && checks_done) {
        scopes.back()[id] = x;
        return x;
      }
      const std::string check = std::to_string(n.check);
      if (c.kind != CheckKind::Bound) {
        // A failing divisor passes on as 1 (a trap otherwise), a failing std as it is.
        const bool divisor = c.kind == CheckKind::NonZero;
        const std::string bad = divisor ? name + "r == 0" : "!(" + name + "r >= 0)";
        line(depth, "const " + T + " " + name + "r = " + x + ";");
        if (!defer_checks) {
          line(depth, "if (" + bad + ") { loom_fault(fault, " + check + ", 0); return; }");
          scopes.back()[id] = name + "r";
          return name + "r";
        }
        // NOTE [Deferred checks]
        line(depth, "if (strict && " + bad + ") { loom_fault(fault, " + check + ", 0); return 1; }");
        line(depth, "loom_seen |= " + bad + ";");
        if (!divisor) {
          scopes.back()[id] = name + "r";
          return name + "r";
        }
        line(depth, "const " + T + " " + name + " = " + bad + " ? (" + T + ")1 : " + name + "r;");
        scopes.back()[id] = name;
        return name;
      }
      e = c.wrap ? "(" + x + " < 0 ? " + x + " + " + size + " : " + x + ")" : x;
      if (defer_checks && !checks_done) {
        line(depth, "const int64_t " + name + "r = " + e + ";");
        line(depth, "const int " + name + "b = (uint64_t)" + name + "r >= (uint64_t)" + size + ";");
        line(depth, "if (strict && " + name + "b) { loom_fault(fault, " + check + ", " + x +
                        "); return 1; }");
        line(depth, "loom_seen |= " + name + "b;");
        line(depth, "const int64_t " + name + " = " + name + "b ? 0 : " + name + "r;");
        scopes.back()[id] = name;
        return name;
      }
      line(depth, "const int64_t " + name + " = " + e + ";");
      if (!checks_done)
        line(depth, "if ((uint64_t)" + name + " >= (uint64_t)" + size + ") { loom_fault(fault, " +
                        check + ", " + x + "); return; }");
      scopes.back()[id] = name;
      return name;
    }
    case Op::Const:
      if (n.slot < 0)
        e = c_literal(std::get<Scalar>(n.arg), n.dtype);
      else if (is_floating(n.dtype))
        e = "(" + T + ")loom_i2d(a[" + std::to_string(n.slot) + "])";
      else if (is_complex(n.dtype))  // real and imaginary parts in two slots
        e = "__builtin_complex(loom_i2d(a[" + std::to_string(n.slot) + "]), loom_i2d(a[" +
            std::to_string(n.slot + 1) + "]))";
      else if (n.dtype == DType::Bool)
        e = "(uint8_t)(a[" + std::to_string(n.slot) + "] != 0)";
      else
        e = "(" + T + ")a[" + std::to_string(n.slot) + "]";
      break;
    case Op::Iota:
      e = "(" + T + ")(" + slotted(n.slot, n.index) + ")";
      break;
    case Op::RandUniform:
    case Op::RandNormal: {
      const RandArg& r = std::get<RandArg>(n.arg);
      // Read from argument slots before the loops (NOTE [Random arguments], launch.cpp).
      // A batched kernel's row holds them (NOTE [Batched stores], schedule/realize.cpp).
      const std::string s = std::to_string(n.slot), s1 = std::to_string(n.slot + 1);
      std::string off = std::to_string(r.offset) + "ULL", seed = std::to_string(r.seed) + "ULL";
      if (n.slot >= 0 && k.batched) {
        off = "(uint64_t)a[" + s1 + "]";
        seed = "(uint64_t)a[" + s + "]";
      } else if (n.slot >= 0) {
        off = "rand_off" + s;
        seed = "rand_seed" + s;
      }
      std::string i = "(uint64_t)(" + off + " + (uint64_t)(" + index_str(k, n.index) + "))";
      if (n.op == Op::RandNormal)
        e = "(" + T + ")loom_normal(" + seed + ", " + i + ")";
      else if (n.dtype == DType::Float64)
        e = "loom_uniform(" + seed + ", " + i + ")";
      else
        e = "loom_uniformf(" + seed + ", " + i + ")";
      e = c_cast(n.dtype == DType::Float64 ? DType::Float64 : DType::Float32, n.dtype, e);
      break;
    }
    case Op::Cast:
    case Op::Bitcast:
      e = c_cast(k.nodes[n.src[0]].dtype, n.dtype, emit(n.src[0], depth));
      break;
    case Op::Reduce:
      return emit_reduce(id, depth);
    case Op::Polynomial:
      e = c_polynomial(int(std::get<int64_t>(n.arg)), n.dtype, emit(n.src[0], depth),
                       emit(n.src[1], depth));
      break;
    case Op::Bessel:
      e = c_bessel(int(std::get<int64_t>(n.arg)), n.dtype, emit(n.src[0], depth));
      break;
    case Op::Igamma:
      e = c_igamma(int(std::get<int64_t>(n.arg)), n.dtype, emit(n.src[0], depth),
                   emit(n.src[1], depth));
      break;
    default: {
      // NOTE [Integer division] by a constant power of two (a pooling index's row and column,
      // `i // 2`, `i % 8`): a floor quotient is an arithmetic shift and the remainder a mask,
      // vectorized, where the quotient through doubles of an int64 took some twenty
      // operations (the CNN's max pool with indices, 1066 -> 738 us on one thread).
      if ((n.op == Op::FloorDiv || n.op == Op::Remainder) && n.src.size() == 2) {
        const LNode& d = k.nodes[n.src[1]];
        const Scalar* c = d.op == Op::Const && d.slot < 0 ? std::get_if<Scalar>(&d.arg) : nullptr;
        if (c && c->is_int && c->i > 0 && (c->i & (c->i - 1)) == 0 && is_integral(d.dtype) &&
            d.dtype != DType::Bool && k.nodes[n.src[0]].dtype == d.dtype) {
          const std::string x = emit(n.src[0], depth);
          e = n.op == Op::FloorDiv
                  ? "(" + T + ")(" + x + " >> " + std::to_string(__builtin_ctzll(uint64_t(c->i))) + ")"
                  : "(" + T + ")(" + x + " & " + std::to_string(c->i - 1) + "LL)";
          break;
        }
      }
      std::vector<std::string> args;
      for (int s : n.src) args.push_back(emit(s, depth));
      DType in = k.nodes[n.src.back()].dtype;  // Where's condition is first
      e = c_op(n.op, in, n.dtype, args);
    }
  }
  line(depth, "const " + T + " " + name + " = " + e + ";");
  scopes.back()[id] = name;
  return name;
}


// `hoist`: reductions placed at output loop i (place_reductions) are emitted as soon as
// that loop is open, each in a scope of its own level.
// Whether a reduction is placed above output loop `inner` (computed once per outer
// iteration, shared by the inner loop's elements).
static bool row_values(const ReducePlacement* hoist, int inner) {
  if (!hoist) return false;
  for (int level : hoist->level)
    if (level >= 0 && level < inner) return true;
  return false;
}

int Renderer::open_output_loops(bool ivdep, int depth, bool all, const ReducePlacement* hoist) {
  std::vector<int> outs = output_vars();
  if (!all) outs.pop_back();
  if (outs.empty() && !all) return depth;
  auto emit_level = [&](int i) {
    if (!hoist) return;
    scopes.emplace_back();
    for (size_t id = 0; id < k.nodes.size(); ++id)
      if (hoist->level[id] == i && k.nodes[id].op == Op::Reduce) emit(int(id), depth);
  };
  // Whole reductions (NOTE [Whole reductions] in lower.cpp) before the output loops.
  if (!outs.empty() && hoist && hoist->whole) emit_level(-1);
  if (outs.empty() && k.batched) {
    line(depth++, "{");
  } else if (outs.empty()) {
    line(depth++, "for (int64_t x_ = start; x_ < end; ++x_) {");
    // NOTE [Hoisted reductions]: a variance's mean is computed before its sum of squares,
    // not in that sum's loop (gcc moved such a loop out; clang does not).
    emit_level(-1);
  } else if (k.batched) {
    line(depth++, loop(var_name(k, outs[0]), k.var_size[outs[0]]) + " {");
  } else if (stream_chunk && all && outs.size() == 1) {
    open_stream_loop(outs[0], true, depth);
  } else {
    std::string x0 = var_name(k, outs[0]);
    // NOTE [One-loop kernels]: clang's cost model kept a lone output loop with gathers
    // scalar (a binary search's 188 nodes over 256K elements, 7.1 ms; 1.3 with the hint).
    if (outs.size() == 1 && all && ivdep) line(depth, "LOOM_IVDEP");
    line(depth++, "for (int64_t " + x0 + " = start; " + x0 + " < end; ++" + x0 + ") {");
  }
  emit_level(0);
  for (size_t i = 1; i < outs.size(); ++i) {
    if (stream_chunk && all && i + 1 == outs.size()) {
      open_stream_loop(outs[i], false, depth);
      emit_level(int(i));
      continue;
    }
    if (i + 1 == outs.size() && all && !k.batched)
      hoist_invariant_loads(std::vector<int>(outs.begin(), outs.end() - 1), depth);
    if (i + 1 == outs.size() && ivdep) line(depth, "LOOM_IVDEP");
    // NOTE [gcc 12 peeled-loop SLP]: gcc 12.2 peels an innermost loop of up to 4
    // iterations completely (NOTE [Kernel flags]), then vectorizes the loop around it with
    // one lane per copy; a value the copies share that came from a conditional load (a
    // masked_fill'd row summed for each element: x * r.sum(-1, keepdim=True)) was then
    // loaded as 4 consecutive elements instead of one, past the end of its row. Such a
    // loop under values computed per row (hoisted reductions) stays a loop.
    if (i + 1 == outs.size() && k.var_size[outs[i]] <= 4 && row_values(hoist, int(i)))
      line(depth, "#pragma GCC unroll 1");
    line(depth++, loop(var_name(k, outs[i]), k.var_size[outs[i]]) + " {");
    emit_level(int(i));
  }
  return depth;
}

// The kernel function; a batched kernel's prologue is a static function called first.
std::string Renderer::render(bool entry) {
  if (entry) stream_chunk = stream_block();
  if (entry) os << c_libc_decls() << c_prelude() << c_math_prelude();
  if (stream_chunk) os << c_stream_prelude();
  if (entry && uses_any(k, {Op::Sin, Op::Cos, Op::Tan, Op::Asin, Op::Acos, Op::Atan, Op::Atan2}))
    os << c_trig_prelude();
  if (entry && uses_any(k, {Op::Log2, Op::Log10, Op::Exp2, Op::Expm1, Op::Sinh, Op::Cosh,
                           Op::Asinh, Op::Acosh, Op::Atanh, Op::Fmod, Op::Remainder,
                           Op::FloorDiv, Op::Erfinv}))
    os << c_wide_math_prelude();
  if (entry && uses_double_math(k)) os << c_double_math_prelude();
  if (entry && uses_double_trig(k)) os << c_double_trig_prelude();
  if (entry && uses_gamma(k)) os << c_gamma_prelude();
  if (entry && uses_special(k)) os << c_special_prelude();
  if (entry && uses_op(k, Op::Polynomial)) os << c_polynomial_prelude();
  if (entry && uses_op(k, Op::Bessel)) os << c_bessel_prelude();
  if (entry && uses_op(k, Op::Igamma)) os << c_igamma_prelude();
  if (entry && k.prologue) {
    Renderer pro(*k.prologue);
    os << pro.render(false);
  }
  // NOTE [Deferred checks]: a check that returns from the kernel when it fails (an index out
  // of range, an integer divisor of zero) kept every loop around it scalar: a loop with an
  // exit does not vectorize. A store kernel with checks (not a scatter, whose checks run
  // first, nor a batched kernel or one with a prologue) is now its body twice: each check records a failure in loom_seen and passes on a value that is
  // safe to use (index 0, divisor 1), and only if one failed does the body run again in
  // strict mode, where the first failed check reports its fault and returns. A kernel that
  // may fault writes fresh memory (NOTE [Faults], schedule/realize.cpp), so what the first
  // run wrote is never seen. Over 1M elements on two threads, with the division of NOTE
  // [Integer division] (ops_c.cpp) and the faulting kernel run on the executor
  // (launch.cpp): a gather along rows 0.72 -> 0.38 ms (eager 0.81), int64 floor division
  // 6.9 -> 1.0 ms (eager 4.7-5.1), remainder 5.6 -> 1.0 (3.8-4.3).
  //
  // Sin, cos and tan leave their large-argument path to the strict run the same way (NOTE
  // [Double trig]), and float fmod, remainder and floor division all but their first
  // reduction step (NOTE [Float fmod]), where rerunning is safe without checks: a kernel
  // that reads no memory it writes and stores nothing beside its output.
  auto same_mem = [&](size_t p) {
    return !k.params[0] || !k.params[p] || k.params[p] == k.params[0];
  };
  bool out_alone = true;
  for (size_t p = 1; p < k.params.size(); ++p) out_alone &= !same_mem(p);
  bool reads_out = false;
  for (const LNode& n : k.nodes) reads_out |= (n.op == Op::Load || n.op == Op::Gather) && n.param == 0;
  // A scatter's check pass (NOTE [Parallel scatters]), a function run twice like a deferred
  // body: the first run records failures, the strict one reports the first.
  const bool check_pass = entry && k.out_dyn >= 0 && !k.checks.empty() && !k.check_in_reduce &&
                          !k.batched && !stream_chunk;
  const bool two_pass = entry && scatter_two_pass(k);
  if (check_pass) {
    os << "static inline __attribute__((always_inline)) int loom_checks(char** bufs, int64_t "
          "start, int64_t end, const int strict) {\n  int loom_seen = 0;\n";
    const size_t outside = scopes.size();
    declare_params();
    defer_checks = true;
    render_index_checks();
    defer_checks = false;
    scopes.resize(outside);
    os << "  return loom_seen;\n}\n";
  }
  defer_checks = entry && !k.batched && k.out_dyn < 0 && !k.prologue &&
                 (uses_op(k, Op::Check) || (uses_strict_paths(k) && out_alone && !reads_out &&
                                            k.params[0] && k.extra.empty()));
  if (defer_checks) {
    os << "static inline __attribute__((always_inline)) int loom_body(char** bufs, int64_t "
          "start, int64_t end, const int strict) {\n  int loom_seen = 0;\n";
  } else {
    os << (entry ? "void kernel" : "static void loom_prologue")
       << "(char** bufs, int64_t start, int64_t end) {\n";
    if (uses_strict_paths(k)) line(1, "const int strict = 1; int loom_seen = 0;");
  }
  if (entry && k.prologue)
    line(1, "if (start == 0) loom_prologue(bufs, 0, " +
                std::to_string(k.prologue->var_size.empty() ? 1 : k.prologue->var_size[0]) +
                "LL);");
  declare_params();
  const std::string checked = "loom_checks(bufs, start, end, 0) && loom_checks(bufs, start, end, 1)";
  if (two_pass) line(1, "if (fault[2] == 0) { (void)(" + checked + "); return; }");
  else if (check_pass) line(1, "if (" + checked + ") return;");
  if (k.out_dyn >= 0 && !k.checks.empty() && !k.check_in_reduce && !check_pass) render_index_checks();
  int depth = 1;
  if (k.batched) {
    line(1, "const int64_t* rows = (const int64_t*)bufs[" + std::to_string(k.params.size() + 1) +
                "];");
    line(depth++, "for (int64_t b_ = start; b_ < end; ++b_) {");
    line(depth, "const int64_t* a = rows + b_ * " + std::to_string(k.slot_values.size()) + "LL;");
  }
  const int column = column_tile(), scan = column ? 0 : scan_tile();
  if (column || scan) {  // the innermost output loop in blocks
    depth = open_output_loops(false, depth, false);
    if (column) render_column_tiles(column, depth);
    else render_scan_tiles(scan, depth);
    while (depth > 1) line(--depth, "}");
    close_kernel();
    return os.str();
  }
  const bool plain = !k.batched && k.scan_var < 0 && k.out_dyn < 0;
  ReducePlacement hoist;
  if (plain) hoist = place_reductions(k);
  const size_t outer_scopes = base_scopes = scopes.size();
  if (plain && hoist.ok) placement = &hoist;
  if (plain && hoist.ok) plan_row_caches(hoist);
  if (plain && hoist.ok && !k.check_in_reduce) plan_prefetch(hoist);
  pipeline = plain && hoist.ok && plan_row_pipeline(hoist);
  if (int tile = plain ? transpose_tile() : 0)
    depth = open_transpose_tiles(tile, depth);
  else if (pipeline)
    depth = open_row_pipeline(depth);
  else
    depth = open_output_loops(k.scan_var < 0 && (k.out_dyn < 0 || scatter_rows_distinct()),
                              depth, true, plain && hoist.ok ? &hoist : nullptr);
  scopes.emplace_back();
  for (auto& [id, m] : row_cache)
    scopes.back()[m] = std::string(pipeline ? "rowprev" : "row") + std::to_string(id) + "[" +
                       var_name(k, output_vars().back()) + "]";
  if (k.out_dyn >= 0) {
    render_scatter_store(depth);
  } else if (k.scan_var >= 0) {
    render_scan(depth);
  } else if (stream_chunk) {
    close_stream(emit(k.root, depth), depth);
  } else {
    std::string out = "p0[" + slotted(k.out_slot, k.out_index) + "]";
    std::string v = emit(k.root, depth);
    line(depth, out + " = " + c_store(k.out_dtype, v) + ";");
    store_extras(depth);
  }
  scopes.resize(outer_scopes);
  while (depth > 1) line(--depth, "}");
  if (stream_chunk) line(1, "loom_sfence();");
  close_kernel();
  return os.str();
}

// The kernel's buffers, fault array and argument slots, as locals (a pushed scope holds
// the slots' values).
void Renderer::declare_params() {
  auto same_mem = [&](size_t p) {
    return !k.params[0] || !k.params[p] || k.params[p] == k.params[0];
  };
  bool out_alone = true;
  for (size_t p = 1; p < k.params.size(); ++p) out_alone &= !same_mem(p);
  // NOTE [Restrict]: a parameter in another allocation than the output cannot alias it,
  // and says so, so that the compiler may keep loads (and what they feed: a batch norm's
  // per-channel scale) out of loops that store. Parameters are the same allocation only
  // when they are the same Memory; the output without such a twin is restrict too.
  for (size_t p = 0; p < k.params.size(); ++p) {
    std::string t = c_storage_type(k.param_dtype[p]);
    const bool restrict = p == 0 ? out_alone && k.params[0] : !same_mem(p);
    line(1, t + "*" + (restrict ? " restrict" : "") + " p" + std::to_string(p) + " = (" + t +
                "*)bufs[" + std::to_string(p) + "];");
  }
  line(1, "int64_t* fault = (int64_t*)bufs[" + std::to_string(k.params.size()) + "];");
  if (!k.batched && !k.slot_values.empty()) {  // NOTE [Scalar arguments] (launch.cpp)
    line(1, "const int64_t* restrict a = (const int64_t*)bufs[" +
                std::to_string(k.params.size() + 1) + "];");
    // Each argument is read once, before the loops: gcc does not vectorize a loop that
    // reads one (a layer norm's eps and GELU's constants kept its row loop scalar).
    scopes.emplace_back();
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (k.nodes[i].op == Op::Const && k.nodes[i].slot >= 0) emit(int(i), 1);
    std::vector<int> rand_slots;  // one Rand LNode per node, but two may share a slot pair
    for (const LNode& n : k.nodes)
      if ((n.op == Op::RandUniform || n.op == Op::RandNormal) && n.slot >= 0 &&
          std::find(rand_slots.begin(), rand_slots.end(), n.slot) == rand_slots.end()) {
        rand_slots.push_back(n.slot);
        const std::string s = std::to_string(n.slot);
        line(1, "const uint64_t rand_seed" + s + " = (uint64_t)a[" + s + "], rand_off" + s +
                    " = (uint64_t)a[" + std::to_string(n.slot + 1) + "];");
      }
  }
}

void Renderer::close_kernel() {
  if (!defer_checks) {
    os << "}\n";
    return;
  }
  os << "  return loom_seen;\n}\n"
     << "void kernel(char** bufs, int64_t start, int64_t end) {\n"
     << "  if (loom_body(bufs, start, end, 0)) loom_body(bufs, start, end, 1);\n}\n";
}

void Renderer::store_extras(int depth) {
  for (const LOutput& o : k.extra) {
    std::string e = emit(o.root, depth);
    line(depth, "p" + std::to_string(o.param) + "[" + index_str(k, o.index) +
                    "] = " + c_store(o.dtype, e) + ";");
  }
}

}  // namespace c_render

std::string render_c(const LKernel& k) {
  c_render::Renderer r(k);
  return r.render();
}

}  // namespace loom
