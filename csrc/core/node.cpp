#include "core/node.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "core/extern.h"
#include "core/memory.h"

namespace loom {

namespace {

struct OpInfo {
  const char* name;
  int arity;
  OpKind kind;
};

const OpInfo kOpInfo[] = {
#define X(name, arity, kind) {#name, arity, OpKind::kind},
    LOOM_OPS(X)
#undef X
};

inline void mix(size_t& h, size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); }

void mix_shape(size_t& h, const Shape& s) {
  mix(h, s.size());
  for (int64_t v : s) mix(h, std::hash<int64_t>()(v));
}

size_t hash_arg(const Arg& a) {
  size_t h = a.index();
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          mix(h, std::hash<int64_t>()(v));
        } else if constexpr (std::is_same_v<T, Scalar>) {
          mix(h, v.is_int);
          mix(h, v.is_int ? std::hash<int64_t>()(v.i) : std::hash<double>()(v.f));
          mix(h, std::hash<double>()(v.im));
        } else if constexpr (std::is_same_v<T, View>) {
          mix_shape(h, v.sizes);
          mix_shape(h, v.strides);
          mix(h, v.offset);
        } else if constexpr (std::is_same_v<T, IndexMap>) {
          mix_shape(h, v.offs);
          mix_shape(h, v.mult);
          for (int d : v.dim_of) mix(h, d);
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          mix(h, int(v.kind));
          for (int d : v.axes) mix(h, d);
        } else if constexpr (std::is_same_v<T, RandArg>) {
          mix(h, v.seed);
          mix(h, v.offset);
        } else if constexpr (std::is_same_v<T, std::shared_ptr<ExternArg>>) {
          mix(h, std::hash<const void*>()(v.get()));
        } else if constexpr (std::is_same_v<T, CheckArg>) {
          mix(h, std::hash<int64_t>()(v.size));
          mix(h, v.wrap);
          mix(h, v.msg);
          mix(h, size_t(v.kind));
        }
      },
      a);
  return h;
}

// Weak table of live interned nodes. Nodes remove themselves when they die, so the table
// never holds expired entries. One array probed linearly from each node's hash, a removed
// node leaving a tombstone, rebuilt when live entries and tombstones fill half of it: a
// node made and dropped (every op's result, every tiny op) allocated and freed an entry
// of a std::unordered_multimap.
struct InternTable {
  std::mutex mu;
  std::atomic<uint64_t> serial{0};  // the last node's (Node::serial)
  std::vector<Node*> slots;  // nullptr: never used; tomb(): a node removed
  size_t live = 0, used = 0;  // live entries; live entries and tombstones

  static Node* tomb() { return reinterpret_cast<Node*>(uintptr_t(1)); }
  size_t mask() const { return slots.size() - 1; }
  static size_t start(size_t hash) { return size_t(uint64_t(hash) * 0x9E3779B97F4A7C15ull >> 20); }

  // Calls f(node) for each live entry of this hash until it returns true.
  template <typename F>
  Node* find_if(size_t hash, F f) const {
    if (slots.empty()) return nullptr;
    for (size_t i = start(hash) & mask();; i = (i + 1) & mask()) {
      Node* n = slots[i];
      if (!n) return nullptr;
      if (n != tomb() && n->hash == hash && f(n)) return n;
    }
  }
  void insert(Node* n) {
    if (2 * (used + 1) > slots.size()) rebuild();
    size_t i = start(n->hash) & mask();
    while (slots[i] && slots[i] != tomb()) i = (i + 1) & mask();
    if (!slots[i]) ++used;
    slots[i] = n;
    ++live;
  }
  void erase(Node* n) {
    for (size_t i = start(n->hash) & mask();; i = (i + 1) & mask())
      if (slots[i] == n) {
        slots[i] = tomb();
        --live;
        return;
      }
  }
  void rebuild() {
    std::vector<Node*> old = std::move(slots);
    size_t n = 1024;
    while (n < 4 * (live + 1)) n *= 2;
    slots.assign(n, nullptr);
    live = used = 0;
    for (Node* e : old)
      if (e && e != tomb()) insert(e);
  }
};

InternTable& table() {
  static InternTable* t = new InternTable();  // leaked: nodes may die at exit
  return *t;
}

std::atomic<int64_t> g_live{0};

bool same(const Node& n, Op op, DType dtype, const Shape& shape,
          const Sources& src, const Arg& arg) {
  if (n.op != op || n.dtype != dtype || n.shape != shape || n.src.size() != src.size() ||
      !(n.arg == arg) || n.realized)
    return false;
  for (size_t k = 0; k < src.size(); ++k)
    if (n.src[k] != src[k]) return false;
  return true;
}

}  // namespace

const char* op_name(Op op) { return kOpInfo[int(op)].name; }
OpKind op_kind(Op op) { return kOpInfo[int(op)].kind; }
int op_arity(Op op) { return kOpInfo[int(op)].arity; }

const char* reduce_name(ReduceKind k) {
  static const char* names[] = {"sum", "prod", "max", "min", "argmax", "argmin", "any", "all",
                                "pool_argmax", "logsumexp"};
  return names[int(k)];
}

namespace {

// The sources of dying nodes still to release on this thread, and whether a destructor
// up its stack is releasing them. Trivial, so that reaching it costs one call (a
// thread-local in a shared library is reached through __tls_get_addr, and a guarded one
// through two: 27 calls per `x + 1` before). The list is made on a thread's first use and
// kept for its capacity; it outlives its thread (threads that drop nodes are few).
struct Releasing {
  bool active;
  std::vector<NodeRef>* pending;
};

Releasing& releasing() {
  static thread_local Releasing r;
  if (!r.pending) r.pending = new std::vector<NodeRef>();
  return r;
}

}  // namespace

// Dropping the last reference to a long chain would destroy it recursively, one frame per
// node: sources are handed to the outermost destructor on this thread and released in a
// loop there.
Node::~Node() {
  if (interned) {
    std::lock_guard<std::mutex> g(table().mu);
    table().erase(this);
  }
  --g_live;
  if (src.empty()) return;
  Releasing& r = releasing();
  std::vector<NodeRef>& pending = *r.pending;
  for (auto& s : src) pending.push_back(std::move(s));
  if (r.active) return;
  r.active = true;
  while (!pending.empty()) {
    NodeRef n = std::move(pending.back());
    pending.pop_back();
    n.reset();  // may push n's sources onto `pending`
  }
  r.active = false;
}

namespace {

// NOTE [Unshared nodes]: a buffer's Empty value (numbered, so never equal to another) and
// its writes (each on the buffer's value before it, so equal only to a second identical
// write recorded on the same state, which nothing needs merged) gain nothing from
// interning, which cost each op's result its write's hash, two lock acquisitions and a
// table probe, insertion and erasure (a tenth of a tiny op's instructions under callgrind).
bool unshared(Op op) { return op == Op::Empty || op == Op::Store || op == Op::Scatter; }

// A new node (not yet in the intern table) with its serial and depth.
std::shared_ptr<Node> new_node(Op op, DType dtype, Shape&& shape, Sources&& src, Arg&& arg) {
  auto n = std::make_shared<Node>(op, dtype, std::move(shape), std::move(src), std::move(arg));
  n->serial = ++table().serial;
  for (const auto& s : n->src) n->depth = std::max(n->depth, s->depth);
  if (op_kind(op) != OpKind::Flat) n->depth += 1;
  ++g_live;
  return n;
}

}  // namespace

NodeRef make_node(Op op, DType dtype, Shape shape, Sources src, Arg arg) {
  if (unshared(op)) return new_node(op, dtype, std::move(shape), std::move(src), std::move(arg));
  size_t h = size_t(op) * 1315423911u + size_t(dtype);
  mix_shape(h, shape);
  for (const auto& s : src) mix(h, std::hash<const void*>()(s.get()));
  mix(h, hash_arg(arg));
  auto& t = table();
  std::lock_guard<std::mutex> g(t.mu);
  NodeRef alive;
  t.find_if(h, [&](Node* n) {
    if (!same(*n, op, dtype, shape, src, arg)) return false;
    // The node may be dying (count 0) while its destructor waits for the lock.
    alive = n->weak_from_this().lock();
    return bool(alive);
  });
  if (alive) return alive;
  auto n = new_node(op, dtype, std::move(shape), std::move(src), std::move(arg));
  n->hash = h;
  n->interned = true;
  t.insert(n.get());
  return n;
}

NodeRef make_data(std::shared_ptr<Memory> mem) {
  auto n = std::make_shared<Node>();
  n->op = Op::Data;
  n->dtype = DType::UInt8;
  n->shape = {int64_t(mem->nbytes)};
  n->realized = std::move(mem);
  n->serial = ++table().serial;
  ++g_live;
  return n;
}

void set_realized(const NodeRef& n, std::shared_ptr<Memory> mem) {
  if (n->interned) {
    std::lock_guard<std::mutex> g(table().mu);
    table().erase(n.get());
    n->interned = false;
  }
  n->realized = std::move(mem);
  n->src.clear();
  n->depth = 0;
}

size_t live_node_count() { return size_t(g_live.load()); }


std::string arg_str(const Arg& a) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          os << v;
        } else if constexpr (std::is_same_v<T, Scalar>) {
          if (v.is_int)
            os << v.i;
          else
            os << v.f;
          if (v.im != 0) os << (v.im > 0 ? "+" : "") << v.im << "j";
        } else if constexpr (std::is_same_v<T, View>) {
          os << v.str();
        } else if constexpr (std::is_same_v<T, IndexMap>) {
          os << "map(";
          for (size_t k = 0; k < v.dim_of.size(); ++k)
            os << (k ? "," : "") << v.dim_of[k] << "*" << v.mult[k];
          os << ")";
        } else if constexpr (std::is_same_v<T, ReduceArg>) {
          os << reduce_name(v.kind) << "(";
          for (size_t k = 0; k < v.axes.size(); ++k) os << (k ? "," : "") << v.axes[k];
          os << ")";
        } else if constexpr (std::is_same_v<T, RandArg>) {
          os << "seed=" << v.seed << "+" << v.offset;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<ExternArg>>) {
          os << v->call->name << "#" << v->out;
        } else if constexpr (std::is_same_v<T, CheckArg>) {
          if (v.kind == CheckKind::NonZero)
            os << "!=0 msg" << v.msg;
          else if (v.kind == CheckKind::NonNegative)
            os << ">=0 msg" << v.msg;
          else
            os << (v.wrap ? "wrap<" : "<") << v.size << " msg" << v.msg;
        }
      },
      a);
  return os.str();
}

std::string node_str(const Node& n) {
  std::ostringstream os;
  os << op_name(n.op) << " " << dtype_name(n.dtype) << " [";
  for (size_t k = 0; k < n.shape.size(); ++k) os << (k ? "," : "") << n.shape[k];
  os << "]";
  std::string a = arg_str(n.arg);
  if (!a.empty()) os << " " << a;
  if (n.realized) os << " (realized)";
  return os.str();
}

std::string graph_str(const NodeRef& root) {
  std::ostringstream os;
  std::unordered_map<const Node*, int> ids;
  std::function<int(const NodeRef&)> visit = [&](const NodeRef& n) -> int {
    auto it = ids.find(n.get());
    if (it != ids.end()) return it->second;
    std::vector<int> srcs;
    for (const auto& s : n->src) srcs.push_back(visit(s));
    int id = int(ids.size());
    ids[n.get()] = id;
    os << "  %" << id << " = " << node_str(*n);
    for (int s : srcs) os << " %" << s;
    os << "\n";
    return id;
  };
  visit(root);
  return os.str();
}

}  // namespace loom
