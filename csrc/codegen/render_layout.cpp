// How a rendered kernel walks memory: rows of reduced values kept for the output loop, the
// next row prefetched, and large outputs written with non-temporal stores (tiles of
// columns, scans and transposes are in render_tiles.cpp).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>

#include "codegen/renderer.h"

namespace loom::c_render {

// NOTE [Streaming stores]: an output larger than about half the last-level cache would not
// stay in it anyway, and each ordinary store of it first reads the line it writes (so a
// kernel writing 64 MB moves 128). Such a kernel gathers each block of kStreamBytes of
// results on the stack, where the innermost output loop vectorizes as before, then writes
// the block with non-temporal stores (loom_stream, c_stream_prelude). Softmax over
// 4096x4096 floats: 12.8 -> 10.2 ms on two threads here (8 KB blocks). Rows shorter than
// kMinStreamRow do not stream. The threshold comes from the
// machine's cache size (one instance of it: glibc's sysconf reports a whole socket's),
// as the compiler flags come from its instruction set. LOOM_STREAM_BYTES overrides it (0:
// never stream), read once: a plan must render the same source for the whole process.
int64_t stream_threshold() {
  static const int64_t bytes = []() -> int64_t {
    if (const char* e = std::getenv("LOOM_STREAM_BYTES")) {
      const int64_t n = std::atoll(e);
      return n > 0 ? n : INT64_MAX;
    }
    int64_t l3 = 32 << 20;
    if (std::FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r")) {
      long n = 0;
      char unit = 0;
      if (std::fscanf(f, "%ld%c", &n, &unit) >= 1 && n > 0)
        l3 = int64_t(n) << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
      std::fclose(f);
    }
    // A virtual machine may report its host's whole cache (260 MB "shared by 2 cores"
    // here), which other tenants use too: at most 8 MB (a large per-core share of
    // today's parts) counts for each core this process runs on.
    const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
    l3 = std::min<int64_t>(l3, cores * (8 << 20));
    return std::max<int64_t>(l3 / 2, 4 << 20);
  }();
  return bytes;
}

// NOTE [Invariant loads]: a load whose index moves with none of the loops from the
// innermost output loop in (an index_select's row index, a scale per row) is read once
// per iteration outside it. Read inside it, clang took an address computed from it for a
// varying one and gathered contiguous rows element by element, even from restrict
// pointers: index_select of 512 bfloat16 rows of 1024 took 145 us (vpinsrw, one element
// at a time), float32 rows went through vgatherqps. Only loads of memory the kernel does
// not write move (a store in the loop could change what they read), and only into a scope
// that closes with the loops.
void Renderer::hoist_invariant_loads(const std::vector<int>& outer, int depth) {
  std::vector<bool> written(k.params.size());
  auto mark = [&](int p) {
    for (size_t q = 0; q < k.params.size(); ++q)
      written[q] = written[q] || int(q) == p || (k.params[q] && k.params[q] == k.params[p]);
  };
  mark(0);
  for (const LOutput& o : k.extra) mark(o.param);
  std::vector<bool> live(k.nodes.size());
  std::vector<int> todo;
  for (int r : {k.root, k.out_dyn}) if (r >= 0) todo.push_back(r);
  for (const LOutput& o : k.extra) todo.push_back(o.root);
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (live[size_t(id)]) continue;
    live[size_t(id)] = true;
    for (int s : k.nodes[size_t(id)].src) todo.push_back(s);
  }
  scopes.emplace_back();
  for (size_t id = 0; id < k.nodes.size(); ++id) {
    const LNode& n = k.nodes[id];
    if (!live[id] || n.op != Op::Load || n.slot >= 0 || written[size_t(n.param)] || find(int(id)))
      continue;
    bool moves = false;
    for (size_t v = 0; v < n.index.coef.size(); ++v)
      moves |= n.index.coef[v] != 0 && std::find(outer.begin(), outer.end(), int(v)) == outer.end();
    if (!moves) emit(int(id), depth);
  }
}

// Whether node a (of a reduction's body, over var r) computes what node b (of the
// output expression, over output var x) computes, with r standing for x.
bool Renderer::same_expr(int a, int b, int r, int x) const {
  if (a == b) return true;
  const LNode &na = k.nodes[a], &nb = k.nodes[b];
  const bool same_slot =
      na.slot == nb.slot || (na.op == Op::Const && na.slot >= 0 && nb.slot >= 0 &&
                             k.slot_values[size_t(na.slot)] == k.slot_values[size_t(nb.slot)]);
  if (na.op != nb.op || na.dtype != nb.dtype || na.param != nb.param || !same_slot ||
      na.op == Op::Reduce || na.op == Op::Check || na.src.size() != nb.src.size() ||
      !(na.arg == nb.arg))
    return false;
  if (na.index.c != nb.index.c) return false;
  for (int v = 0; v < int(k.var_size.size()); ++v)  // b's var v is a's var va
    if (coef(nb.index, v) != coef(na.index, v == x ? r : v == r ? x : v)) return false;
  for (size_t i = 0; i < na.src.size(); ++i)
    if (!same_expr(na.src[i], nb.src[i], r, x)) return false;
  return true;
}

bool Renderer::uses_var(int id, int v) const {
  const LNode& n = k.nodes[id];
  if (coef(n.index, v) != 0) return true;
  for (int s : n.src)
    if (uses_var(s, v)) return true;
  return false;
}

// NOTE: softmax's output recomputes exp(x - max) that its sum already computed, element
// for element. When a reduction placed outside the innermost output loop sums a value
// that the output expression computes again along that loop, the reduction keeps its
// values in a row on the stack (up to kMaxRowBytes) and the output reads them back.
void Renderer::plan_row_caches(const ReducePlacement& hoist) {
  std::vector<int> outs = output_vars();
  if (outs.empty() || k.check_in_reduce) return;
  const int x = outs.back(), inner = int(outs.size()) - 1;
  for (size_t id = 0; id < k.nodes.size(); ++id) {
    const LNode& n = k.nodes[id];
    if (n.op != Op::Reduce || hoist.level[id] < 0 || hoist.level[id] >= inner || n.vars.size() != 1)
      continue;
    const int r = n.vars[0];
    const LNode& b = k.nodes[n.src[0]];
    if (b.op == Op::Load || b.op == Op::Cast || op_kind(b.op) == OpKind::Leaf) continue;
    if (k.var_size[r] != k.var_size[x] ||
        k.var_size[r] * itemsize(b.dtype == DType::Float64 ? b.dtype : DType::Float32) >
            kMaxRowBytes)
      continue;
    for (size_t m = 0; m < k.nodes.size(); ++m)
      if (k.nodes[m].op == b.op && uses_var(int(m), x) && !uses_var(int(m), r) &&
          same_expr(n.src[0], int(m), r, x)) {
        row_cache[int(id)] = int(m);
        break;
      }
  }
}

// NOTE [Row prefetch]: a row kernel (softmax, layer norm) reads each row from memory in
// its first pass over it, and its later passes work on the row in cache: memory and
// arithmetic take turns. When two or more vectorized reductions run per row, the last
// one prefetches, a cache line at a time, what the first one's contiguous loads will
// read for the next row, so that the next row arrives while this one computes (softmax
// over 4096x4096 floats: 14 -> 11-12.8 ms on two threads here).
void Renderer::plan_prefetch(const ReducePlacement& hoist) {
  const std::vector<int> outs = output_vars();
  if (outs.empty()) return;
  std::vector<int> passes;
  for (size_t id = 0; id < k.nodes.size(); ++id) {
    const LNode& n = k.nodes[id];
    if (n.op == Op::Reduce && hoist.level[id] == 0 && n.vars.size() == 1 &&
        reduce_lanes(n, std::get<ReduceArg>(n.arg).kind, n.dtype) > 0)
      passes.push_back(int(id));
  }
  if (passes.size() < 2) return;
  const int x0 = outs[0], r = k.nodes[passes.front()].vars[0];
  if (k.var_size[k.nodes[passes.back()].vars[0]] != k.var_size[r]) return;
  std::vector<int> todo{k.nodes[passes.front()].src[0]}, loads;
  std::vector<bool> seen(k.nodes.size());
  while (!todo.empty() && loads.size() < 4) {
    const int i = todo.back();
    todo.pop_back();
    if (seen[i]) continue;
    seen[i] = true;
    const LNode& n = k.nodes[i];
    if (n.op == Op::Reduce) continue;
    for (int s : n.src) todo.push_back(s);
    if (n.op != Op::Load || n.slot >= 0 || coef(n.index, r) != 1 || coef(n.index, x0) == 0 ||
        k.var_size[x0] * k.var_size[r] * itemsize(n.dtype) < kPrefetchBytes)
      continue;
    bool row_only = true;
    for (int v = 0; v < int(k.var_size.size()); ++v)
      row_only &= v == x0 || v == r || !coef(n.index, v);
    if (row_only) loads.push_back(i);
  }
  if (loads.empty()) return;
  prefetch_host = passes.back();
  prefetch_row = x0;
  prefetch_loads = loads;
}

// The prefetches of one block of `lanes` elements starting at `ro` (NOTE [Row prefetch]).
void Renderer::emit_prefetches(const std::string& ro, int lanes, int depth) {
  for (int id : prefetch_loads) {
    const LNode& n = k.nodes[id];
    const int64_t size = itemsize(n.dtype), step = std::max<int64_t>(1, 64 / size);
    const std::string at = "p" + std::to_string(n.param) + "[" + std::to_string(n.index.c) +
                           "LL + (" + var_name(k, prefetch_row) + " + 1) * " +
                           std::to_string(coef(n.index, prefetch_row)) + "LL + " + ro;
    for (int64_t j = 0; j < std::max<int64_t>(1, lanes * size / 64); ++j)
      line(depth, "__builtin_prefetch(&" + at + " + " + std::to_string(j * step) + "LL], 0, 3);");
  }
}

// Results per streamed block, or 0 (NOTE [Streaming stores]): a plain kernel whose
// innermost output loop writes contiguously and whose output is large.
int64_t Renderer::stream_block() const {
  if (k.batched || k.out_dyn >= 0 || k.scan_var >= 0 || k.check_in_reduce || !k.checks.empty() ||
      k.out_slot >= 0 || !k.extra.empty() || column_tile() || transpose_tile())
    return 0;
  const std::vector<int> outs = output_vars();
  if (outs.empty() || coef(k.out_index, outs.back()) != 1) return 0;
  // A kernel that reads its output's memory (an in-place op, a donated temporary: NOTE
  // [Donated memory]) finds the lines it writes in the cache: a non-temporal store there
  // evicts the line first. `x.add_(1e-3)` over 16M floats, alternated six times in
  // separate processes with the caches flushed: 4.81 ms streamed, 2.82 ms not.
  for (const LNode& n : k.nodes)
    if ((n.op == Op::Load || n.op == Op::Gather) && n.param == 0) return 0;
  const int64_t size = itemsize(k.out_dtype);
  int64_t n = 1;
  for (int v : outs) n *= k.var_size[v];
  if (n * size < stream_threshold()) return 0;
  const int64_t inner = k.var_size[outs.back()];
  // Rows of a few elements (a pooling's gradient, rows of 2) would stream a few bytes at
  // a time, with no whole line among them: each copy would cost more than it saves.
  if (outs.size() > 1 && inner * size < kMinStreamRow) return 0;
  // A row of up to two blocks is one block, with its loop's constant trip count; a longer
  // loop is cut into blocks (NOTE [Stream prefetch]).
  const int64_t block = std::max<int64_t>(1, kStreamBytes / size);
  return outs.size() > 1 && inner <= 2 * block ? inner : block;
}

// NOTE [Stream prefetch]: a streaming kernel's arithmetic and its memory traffic took
// turns: the 5-op chain with an exp (16M floats, two threads) took as long as its exp
// alone plus its copy alone, the hardware prefetcher keeping too few lines in flight
// while the vector unit works. A block cut from a longer loop now prefetches, a line at a
// time, what its contiguous loads will read kStreamAheadBytes on, and the blocks are
// kStreamBytes (they were 8 KB, then 1 KB), so that loads, arithmetic and the block's stores
// alternate finely. Rows longer than two blocks are cut too, and a row's next row is then
// fetched while this one's outputs are computed: only loads that move with the rows are
// prefetched (a row of weights that every row reads stays in cache), and only those the
// output loop evaluates (softmax's reads exp(x - max) back from its sum's row cache, not
// x). In the bench, alternated three times: the chain 8.8-9.2 -> 7.1-7.7 ms, the triad
// probe 26.1-27.7 -> 28.9-29.9 GB/s; rows cut: layer norm + GELU 4.5-4.8 -> 3.7-4.1 ms,
// softmax 7.9-8.5 -> 7.4-8.2 (both still prefetch their next row in their last reduction
// too: without that, softmax 9.2-9.8 ms). In a C harness the prefetches alone, on 8 KB
// blocks, bought nothing, and prefetches that skip the caches (locality 0) cost twice
// the time.
void Renderer::plan_stream_prefetch(int v) {
  stream_loads.clear();
  // The loads the output loop evaluates: not those of reductions, nor those below a value
  // it reads back from a row cache (softmax's input, whose exp its sum kept).
  std::vector<bool> reached(k.nodes.size());
  std::vector<int> todo{k.root};
  while (!todo.empty()) {
    const int i = todo.back();
    todo.pop_back();
    if (reached[i]) continue;
    reached[i] = true;
    bool cached = false;
    for (const auto& [r, m] : row_cache) cached |= m == i;
    if (k.nodes[i].op == Op::Reduce || cached) continue;
    for (int s : k.nodes[i].src) todo.push_back(s);
  }
  std::set<std::string> seen;
  const std::vector<int> outs = output_vars();
  for (size_t id = 0; id < k.nodes.size() && stream_loads.size() < 4; ++id) {
    const LNode& n = k.nodes[id];
    if (!reached[id] || n.op != Op::Load || n.slot >= 0 || coef(n.index, v) != 1) continue;
    // Only loads that move with the rows: a row of weights every row reads stays cached.
    bool outer_only = true, moves = outs.size() == 1;
    for (int u = 0; u < int(k.var_size.size()); ++u) {
      const bool out = std::find(outs.begin(), outs.end(), u) != outs.end();
      outer_only &= !coef(n.index, u) || out;
      moves |= out && u != v && coef(n.index, u);
    }
    const std::string at = std::to_string(n.param) + ":" + index_str(k, n.index);
    if (outer_only && moves && seen.insert(at).second) stream_loads.push_back(int(id));
  }
}

// The innermost output loop of a streaming kernel, over var v: blocks of stream_chunk
// results gathered in `orow`, each written out after its loop (close_stream).
void Renderer::open_stream_loop(int v, bool split, int& depth) {
  const std::string x = var_name(k, v), C = std::to_string(stream_chunk) + "LL";
  const std::string lo = split ? "start" : "0";
  const std::string hi = split ? "end" : std::to_string(k.var_size[v]) + "LL";
  const std::string row =
      c_storage_type(k.out_dtype) + " orow[" + C + "] __attribute__((aligned(64)));";
  if (!split && stream_chunk == k.var_size[v]) {
    stream_lo = "0LL";
    stream_hi = hi;
    line(depth, row);
    line(depth, "LOOM_IVDEP");
    line(depth++, loop(x, k.var_size[v]) + " {");
    return;
  }
  stream_lo = x + "o";
  stream_hi = x + "e";
  line(depth++, "for (int64_t " + stream_lo + " = " + lo + "; " + stream_lo + " < " + hi + "; " +
                    stream_lo + " += " + C + ") {");
  line(depth, "const int64_t " + stream_hi + " = " + hi + " - " + stream_lo + " < " + C + " ? " +
                  hi + " : " + stream_lo + " + " + C + ";");
  plan_stream_prefetch(v);
  for (int id : stream_loads) {
    const LNode& n = k.nodes[id];
    const int64_t size = itemsize(n.dtype);
    const std::string ahead = std::to_string(std::max<int64_t>(1, kStreamAheadBytes / size)) + "LL";
    line(depth, "for (int64_t " + x + " = " + stream_lo + " + " + ahead + "; " + x + " < " +
                    stream_hi + " + " + ahead + "; " + x + " += " +
                    std::to_string(std::max<int64_t>(1, 64 / size)) + "LL) __builtin_prefetch(&p" +
                    std::to_string(n.param) + "[" + index_str(k, n.index) + "], 0, 3);");
  }
  line(depth, row);
  line(depth, "LOOM_IVDEP");
  line(depth++,
       "for (int64_t " + x + " = " + stream_lo + "; " + x + " < " + stream_hi + "; ++" + x + ") {");
}

// Stores value `v` of a streaming kernel into its block and, closing the innermost
// output loop, writes the block out.
void Renderer::close_stream(const std::string& v, int& depth) {
  const std::string x = var_name(k, output_vars().back());
  line(depth, "orow[" + x + " - " + stream_lo + "] = " + c_store(k.out_dtype, v) + ";");
  line(--depth, "}");
  line(depth, "{ const int64_t " + x + " = " + stream_lo + "; loom_stream(&p0[" +
                  index_str(k, k.out_index) + "], orow, (" + stream_hi + " - " + stream_lo +
                  ") * (int64_t)sizeof(orow[0])); }");
}

// NOTE [Row pipelining]: a row kernel whose results stream (softmax, layer norm) read a
// row, worked on it in cache, then wrote its results: the row's non-temporal stores went
// out in a burst while the arithmetic waited for them. Each row's results are now computed
// and written during the next row's last pass (the one that prefetches the row after, NOTE
// [Row prefetch]), a block of that pass's lanes at a time, so that loads, stores and
// arithmetic overlap; the last row of a thread's range is written after its loop. The
// previous row's reductions are kept in `prevN` and its row caches in the other half of
// a double buffer (`rowbufN`); its index is the loop variable's, shadowed in a block. In a
// C harness (softmax over 4096x4096 floats, two threads, caches flushed between runs):
// 7.6 -> 6.9 ms. Only kernels whose reductions are all computed once per row, whose
// last pass runs over the output row's length, and whose outputs are two-dimensional.
bool Renderer::plan_row_pipeline(const ReducePlacement& hoist) const {
  if (!stream_chunk || prefetch_host < 0 || k.batched || !k.extra.empty() ||
      !k.checks.empty() || k.check_in_reduce || k.scan_var >= 0 || k.out_dyn >= 0)
    return false;
  const std::vector<int> outs = output_vars();
  if (outs.size() != 2) return false;
  const LNode& host = k.nodes[prefetch_host];
  const int lanes =
      reduce_lanes(host, std::get<ReduceArg>(host.arg).kind, reduce_acc_type(host));
  const int64_t row = k.var_size[outs[1]];
  if (lanes <= 0 || host.vars.size() != 1 || k.var_size[host.vars[0]] != row || row % lanes)
    return false;
  for (size_t id = 0; id < k.nodes.size(); ++id)
    if (k.nodes[id].op == Op::Reduce && hoist.level[id] != 0)
      return false;
  return true;
}

// The reductions computed once per row, in the order they are emitted.
std::vector<int> Renderer::row_reductions() const {
  std::vector<int> out;
  for (size_t id = 0; id < k.nodes.size(); ++id)
    if (k.nodes[id].op == Op::Reduce) out.push_back(int(id));
  return out;
}

// The C type of a reduction's result as emit_reduce names it (an index for arg ones).
std::string Renderer::reduce_result_ctype(int id) const {
  const ReduceKind kind = std::get<ReduceArg>(k.nodes[id].arg).kind;
  if (kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin)
    return "int64_t";
  return compute_ctype(reduce_acc_type(k.nodes[id]));
}

std::string Renderer::row_cache_ctype(int id) const {
  return compute_ctype(k.nodes[k.nodes[id].src[0]].dtype);
}

// Names the results of row `row` (an expression of the outer loop variable, before any
// shadowing) for the output's expression: its reductions' `prevN`, its row caches'
// `rowprevN` (the row cache nodes map to them in render()).
void Renderer::bind_previous_row(const std::string& row, int depth) {
  for (const auto& [id, m] : row_cache)
    line(depth, "const " + row_cache_ctype(id) + "* rowprev" + std::to_string(id) + " = rowbuf" +
                    std::to_string(id) + "[((" + row + ") - start) & 1];");
  scopes.emplace_back();
  for (int id : row_reductions()) scopes.back()[id] = "prev" + std::to_string(id);
}

// Inside the pipeline's host pass, after its block of `lanes` elements at `ro`: the
// previous row's results for the same block, written with non-temporal stores.
void Renderer::emit_pipelined_block(const std::string& ro, int lanes, int depth) {
  const std::vector<int> outs = output_vars();
  const std::string x0 = var_name(k, outs[0]), x1 = var_name(k, outs[1]);
  const std::string L = std::to_string(lanes) + "LL";
  line(depth++, "if (" + x0 + " > start) {");
  line(depth, "const int64_t xp_ = " + x0 + " - 1;");
  // Only values computed outside the output loops stay visible: the current row's must
  // not stand in for the previous row's.
  std::vector<std::unordered_map<int, std::string>> saved = scopes;
  scopes.resize(base_scopes);
  bind_previous_row(x0 + " - 1", depth);
  scopes.emplace_back();
  for (const auto& [id, m] : row_cache)
    scopes.back()[m] = "rowprev" + std::to_string(id) + "[" + x1 + "]";
  line(depth++, "{");
  line(depth, "const int64_t " + x0 + " = xp_;");
  line(depth, c_storage_type(k.out_dtype) + " orow[" + L + "] __attribute__((aligned(64)));");
  line(depth, "LOOM_IVDEP");
  line(depth++, "for (int64_t " + x1 + " = " + ro + "; " + x1 + " < " + ro + " + " + L + "; ++" +
                    x1 + ") {");
  stream_lo = ro;
  stream_hi = ro + " + " + L;
  close_stream(emit(k.root, depth), depth);
  line(--depth, "}");
  line(--depth, "}");
  scopes = std::move(saved);
}

// The pipeline's loops (NOTE [Row pipelining]): the rows, each computing its reductions
// (the last pass writing the row before), then the last row's output loop, left open for
// render() to fill and close as an ordinary streamed row.
int Renderer::open_row_pipeline(int depth) {
  const std::vector<int> outs = output_vars();
  const std::string x0 = var_name(k, outs[0]);
  const std::vector<int> rows = row_reductions();
  for (int id : rows)
    line(depth, reduce_result_ctype(id) + " prev" + std::to_string(id) + " = 0;");
  for (const auto& [id, m] : row_cache)
    line(depth, row_cache_ctype(id) + " rowbuf" + std::to_string(id) + "[2][" +
                    std::to_string(k.var_size[outs[1]]) + "LL] __attribute__((aligned(64)));");
  line(depth++, "for (int64_t " + x0 + " = start; " + x0 + " < end; ++" + x0 + ") {");
  scopes.emplace_back();
  for (int id : rows) emit(id, depth);
  for (int id : rows) line(depth, "prev" + std::to_string(id) + " = " + *find(id) + ";");
  scopes.pop_back();
  line(--depth, "}");
  line(depth++, "if (end > start) {");
  line(depth, "const int64_t " + x0 + " = end - 1;");
  bind_previous_row("end - 1", depth);
  open_stream_loop(outs[1], false, depth);
  return depth;
}

}  // namespace loom::c_render
