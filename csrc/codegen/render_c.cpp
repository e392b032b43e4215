#include <sstream>
#include <unordered_map>

#include "codegen/kernel.h"
#include "codegen/ops_c.h"

namespace loom {

namespace {

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

struct Renderer {
  const LKernel& k;
  std::ostringstream os;
  std::vector<std::unordered_map<int, std::string>> scopes;

  explicit Renderer(const LKernel& kernel) : k(kernel) {}

  void line(int depth, const std::string& s) { os << std::string(2 * depth, ' ') << s << "\n"; }

  const std::string* find(int id) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(id);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  std::string loop(const std::string& v, int64_t n) {
    return "for (int64_t " + v + " = 0; " + v + " < " + std::to_string(n) + "LL; ++" + v + ")";
  }

  // Emits the statements computing node `id` at this depth; returns its C name.
  std::string emit(int id, int depth) {
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
        e = c.wrap ? "(" + x + " < 0 ? " + x + " + " + size + " : " + x + ")" : x;
        line(depth, "const int64_t " + name + " = " + e + ";");
        line(depth, "if ((uint64_t)" + name + " >= (uint64_t)" + size + ") { loom_fault(fault, " +
                        std::to_string(n.check) + ", " + x + "); return; }");
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
        e = "(" + T + ")(" + index_str(k, n.index) + ")";
        break;
      case Op::RandUniform:
      case Op::RandNormal: {
        const RandArg& r = std::get<RandArg>(n.arg);
        std::string i = "(uint64_t)(" + std::to_string(r.offset) + "ULL + (uint64_t)(" +
                        index_str(k, n.index) + "))";
        std::string seed = std::to_string(r.seed) + "ULL";
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
      default: {
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

  std::string emit_reduce(int id, int depth) {
    const LNode& n = k.nodes[id];
    const ReduceKind kind = std::get<ReduceArg>(n.arg).kind;
    const bool arg = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin;
    DType vt = k.nodes[n.src[0]].dtype;
    DType acc_t = arg ? vt : n.dtype;
    std::string acc = "acc" + std::to_string(id), best = "idx" + std::to_string(id);
    line(depth, std::string(compute_ctype(acc_t)) + " " + acc + " = " + c_reduce_init(kind, acc_t) + ";");
    if (arg) line(depth, "int64_t " + best + " = 0;");
    int d = depth;
    std::string lin = "0";
    for (int v : n.vars) {
      line(d++, loop(var_name(k, v), k.var_size[v]) + " {");
      lin = "(" + lin + ") * " + std::to_string(k.var_size[v]) + "LL + " + var_name(k, v);
    }
    scopes.emplace_back();
    std::string v = emit(n.src[0], d);
    if (arg) {
      const char* cmp = kind == ReduceKind::ArgMax ? " > " : " < ";
      line(d, "if (" + v + cmp + acc + " || (" + v + " != " + v + " && " + acc + " == " + acc +
                  ")) { " + acc + " = " + v + "; " + best + " = " + lin + "; }");
    } else {
      line(d, c_reduce_step(kind, acc_t, acc, v));
    }
    scopes.pop_back();
    for (size_t i = 0; i < n.vars.size(); ++i) line(--d, "}");
    std::string name = arg ? best : acc;
    scopes.back()[id] = name;
    return name;
  }

  std::string slotted(int slot, const Affine& a) {
    if (slot < 0) return index_str(k, a);
    return "a[" + std::to_string(slot) + "] + " + index_str(k, a);
  }

  // Opens the output loops (the outermost over [start, end), unless a batched kernel's
  // row loop holds that range); returns the body depth.
  int open_output_loops(bool ivdep, int depth = 1) {
    std::vector<int> outs;
    for (size_t v = 0; v < k.var_size.size(); ++v)
      if (k.is_output_var[v] && int(v) != k.scan_var) outs.push_back(int(v));
    if (outs.empty() && k.batched) {
      line(depth++, "{");
    } else if (outs.empty()) {
      line(depth++, "for (int64_t x_ = start; x_ < end; ++x_) {");
    } else if (k.batched) {
      line(depth++, loop(var_name(k, outs[0]), k.var_size[outs[0]]) + " {");
    } else {
      std::string x0 = var_name(k, outs[0]);
      line(depth++, "for (int64_t " + x0 + " = start; " + x0 + " < end; ++" + x0 + ") {");
    }
    for (size_t i = 1; i < outs.size(); ++i) {
      if (i + 1 == outs.size() && ivdep) line(depth, "#pragma GCC ivdep");
      line(depth++, loop(var_name(k, outs[i]), k.var_size[outs[i]]) + " {");
    }
    return depth;
  }

  // The kernel function; a batched kernel's prologue is a static function called first.
  std::string render(bool entry = true) {
    if (entry) os << c_prelude();
    if (entry && k.prologue) {
      Renderer pro(*k.prologue);
      os << pro.render(false);
    }
    os << (entry ? "void kernel" : "static void loom_prologue")
       << "(char** bufs, int64_t start, int64_t end) {\n";
    if (entry && k.prologue)
      line(1, "if (start == 0) loom_prologue(bufs, 0, " +
                  std::to_string(k.prologue->var_size.empty() ? 1 : k.prologue->var_size[0]) + "LL);");
    for (size_t p = 0; p < k.params.size(); ++p) {
      std::string t = c_storage_type(k.param_dtype[p]);
      line(1, t + "* p" + std::to_string(p) + " = (" + t + "*)bufs[" + std::to_string(p) + "];");
    }
    line(1, "int64_t* fault = (int64_t*)bufs[" + std::to_string(k.params.size()) + "];");
    if (k.out_dyn >= 0 && !k.checks.empty() && !k.check_in_reduce) {
      // Every index is checked before anything is written: a fault leaves p0 untouched.
      int depth = open_output_loops(false);
      scopes.emplace_back();
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (k.nodes[i].op == Op::Check) emit(int(i), depth);
      scopes.pop_back();
      while (depth > 1) line(--depth, "}");
    }
    int depth = 1;
    if (k.batched) {
      line(1, "const int64_t* rows = (const int64_t*)bufs[" + std::to_string(k.params.size() + 1) + "];");
      line(depth++, "for (int64_t b_ = start; b_ < end; ++b_) {");
      line(depth, "const int64_t* a = rows + b_ * " + std::to_string(k.slot_values.size()) + "LL;");
    }
    depth = open_output_loops(k.scan_var < 0 && k.out_dyn < 0, depth);
    scopes.emplace_back();
    if (k.out_dyn >= 0) {
      std::string at = "p0[" + emit(k.out_dyn, depth) + "]";
      std::string v = emit(k.root, depth);
      if (k.combine < 0) {
        line(depth, at + " = " + c_store(k.out_dtype, v) + ";");
      } else {
        std::string T = compute_ctype(k.out_dtype);
        line(depth, "{ " + T + " old = " + c_load(k.out_dtype, at) + ";");
        line(depth + 1, c_reduce_step(ReduceKind(k.combine), k.out_dtype, "old", v));
        line(depth + 1, at + " = " + c_store(k.out_dtype, "old") + "; }");
      }
    } else if (k.scan_var >= 0) {
      std::string out = "p0[" + index_str(k, k.out_index) + "]";
      const LNode& s = k.nodes[k.root];
      ReduceKind kind = std::get<ReduceArg>(s.arg).kind;
      std::string acc = "acc";
      line(depth, std::string(compute_ctype(s.dtype)) + " acc = " + c_reduce_init(kind, s.dtype) + ";");
      line(depth++, loop(var_name(k, k.scan_var), k.var_size[k.scan_var]) + " {");
      scopes.emplace_back();
      std::string v = emit(s.src[0], depth);
      line(depth, c_reduce_step(kind, s.dtype, acc, v));
      if (s.dtype == DType::Float16) line(depth, "acc = loom_rh(acc);");
      if (s.dtype == DType::BFloat16) line(depth, "acc = loom_rb(acc);");
      line(depth, out + " = " + c_store(k.out_dtype, acc) + ";");
      scopes.pop_back();
      line(--depth, "}");
    } else {
      std::string out = "p0[" + slotted(k.out_slot, k.out_index) + "]";
      std::string v = emit(k.root, depth);
      line(depth, out + " = " + c_store(k.out_dtype, v) + ";");
    }
    scopes.pop_back();
    while (depth > 1) line(--depth, "}");
    os << "}\n";
    return os.str();
  }
};

}  // namespace

std::string render_c(const LKernel& k) {
  Renderer r(k);
  return r.render();
}

}  // namespace loom
