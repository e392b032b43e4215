#include "runtime/plan.h"

#include <cstdlib>
#include <cstring>
#include <list>
#include <unordered_map>

namespace loom {

namespace {

class KeyWriter {
 public:
  KeyWriter(PlanKey& key, PlanBinding& b) : w_(key.words), b_(b) {
    static uint32_t walks = 0;
    walk_ = ++walks;
    if (walk_ == 0) walk_ = ++walks;  // 0 marks a node no walk has numbered
  }
  bool ok = true;

  void word(int64_t v) { w_.push_back(v); }
  void shape(const Shape& s) {
    word(int64_t(s.size()));
    w_.insert(w_.end(), s.begin(), s.end());
  }
  void view(const View& v) {
    shape(v.sizes);
    shape(v.strides);
    word(v.offset);
  }

  int64_t memory(Memory* m) {
    for (size_t i = 0; i < b_.mems.size(); ++i)
      if (b_.mems[i] == m) return int64_t(i);
    b_.mems.push_back(m);
    return int64_t(b_.mems.size()) - 1;
  }

  // Post-order: a node's record follows its sources' and names them by number. Numbers
  // live in the nodes (Node::walk), which a later walk overwrites.
  int64_t node(const Node* n) {
    if (n->walk == walk_) return n->walk_id;
    const bool flat_src = n->op == Op::Load || n->op == Op::Gather;
    constexpr size_t kMaxSrc = 3;  // Where; an extern's many inputs never reach a kernel
    if (n->src.size() > kMaxSrc) {
      ok = false;
      return 0;
    }
    int64_t src[kMaxSrc];
    for (size_t i = 0; i < n->src.size(); ++i) {
      const Node* s = n->src[i].get();
      if (i == 0 && flat_src) {
        if (!s->realized) ok = false;
        src[i] = memory(s->realized.get());
      } else {
        src[i] = node(s);
      }
    }
    word(int64_t(n->op) | int64_t(n->dtype) << 8 | int64_t(n->src.size()) << 16);
    shape(n->shape);
    w_.insert(w_.end(), src, src + n->src.size());
    arg(n);
    n->walk = walk_;
    n->walk_id = next_id_++;
    return n->walk_id;
  }

 private:
  void arg(const Node* n) {
    word(int64_t(n->arg.index()));
    if (const auto* v = std::get_if<int64_t>(&n->arg)) {
      word(*v);
    } else if (const auto* s = std::get_if<Scalar>(&n->arg)) {
      if (n->op == Op::Const && (n->dtype == DType::Float32 || n->dtype == DType::Float64)) {
        const double d = s->to_double();
        int64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        int64_t same = int64_t(b_.consts.size());
        for (size_t i = 0; i < b_.consts.size(); ++i)
          if (b_.consts[i] == bits && b_.const_nodes[i]->op == Op::Const) {
            same = int64_t(i);
            break;
          }
        word(same);  // which earlier constant this one equals, or its own number
        b_.consts.push_back(bits);
        b_.const_nodes.push_back(n);
        return;
      }
      int64_t f, im;
      std::memcpy(&f, &s->f, sizeof f);
      std::memcpy(&im, &s->im, sizeof im);
      word(s->is_int);
      word(s->i);
      word(f);
      word(im);
    } else if (const auto* v = std::get_if<View>(&n->arg)) {
      view(*v);
    } else if (const auto* m = std::get_if<IndexMap>(&n->arg)) {
      shape(m->offs);
      word(int64_t(m->dim_of.size()));
      w_.insert(w_.end(), m->dim_of.begin(), m->dim_of.end());
      shape(m->mult);
    } else if (const auto* r = std::get_if<ReduceArg>(&n->arg)) {
      word(int64_t(r->kind));
      word(int64_t(r->axes.size()));
      w_.insert(w_.end(), r->axes.begin(), r->axes.end());
    } else if (const auto* r = std::get_if<RandArg>(&n->arg)) {
      // NOTE [Random arguments] (launch.cpp): bound as two argument slots.
      b_.consts.push_back(int64_t(r->seed));
      b_.const_nodes.push_back(n);
      b_.consts.push_back(int64_t(r->offset));
      b_.const_nodes.push_back(n);
    } else if (const auto* c = std::get_if<CheckArg>(&n->arg)) {
      word(c->size);
      word(int64_t(c->wrap) | int64_t(c->kind) << 1);
      word(c->msg);
    } else if (!std::holds_alternative<std::monostate>(n->arg)) {
      ok = false;  // an extern's argument: not part of any kernel
    }
  }

  std::vector<int64_t>& w_;
  PlanBinding& b_;
  uint32_t walk_;
  int32_t next_id_ = 0;
};

uint64_t hash_words(const std::vector<int64_t>& w) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ w.size();
  for (int64_t v : w) {
    h ^= uint64_t(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  }
  return h ^ (h >> 33);
}

struct KeyHash {
  size_t operator()(const PlanKey& k) const { return size_t(k.hash); }
};

struct PlanCache {
  using Entry = std::pair<KernelPlan, std::list<const PlanKey*>::iterator>;
  std::unordered_map<PlanKey, Entry, KeyHash> plans;
  std::list<const PlanKey*> lru;  // most recently used first
};

PlanCache& plan_cache() {
  static PlanCache* c = new PlanCache();  // leaked: kernels stay loaded until exit
  return *c;
}

bool env_flag(const char* name, bool fallback) {
  const char* s = std::getenv(name);
  return s && *s ? std::strcmp(s, "0") != 0 : fallback;
}

}  // namespace

bool plan_key(PlanKind kind, const View& out, DType dtype, int64_t extra,
              const std::vector<const Node*>& roots, Memory* out_mem, PlanKey& key,
              PlanBinding& binding, const std::vector<ExtraStore>& outputs) {
  key.words.clear();
  binding.mems.clear();
  binding.consts.clear();
  binding.const_nodes.clear();
  KeyWriter kw(key, binding);
  kw.word(int64_t(kind));
  kw.word(int64_t(dtype));
  kw.word(extra);
  kw.view(out);
  kw.memory(out_mem);
  for (const Node* r : roots) kw.word(kw.node(r));
  kw.word(int64_t(outputs.size()));
  for (const ExtraStore& o : outputs) {
    kw.word(int64_t(o.dtype));
    kw.view(o.view);
    kw.word(kw.memory(o.mem.get()));
    kw.word(kw.node(o.value.get()));
  }
  key.hash = hash_words(key.words);
  return kw.ok;
}

const KernelPlan* find_plan(const PlanKey& key) {
  PlanCache& c = plan_cache();
  auto it = c.plans.find(key);
  if (it == c.plans.end()) return nullptr;
  c.lru.splice(c.lru.begin(), c.lru, it->second.second);
  return &it->second.first;
}

void add_plan(const PlanKey& key, KernelPlan plan) {
  PlanCache& c = plan_cache();
  auto it = c.plans.find(key);
  if (it != c.plans.end()) {
    it->second.first = std::move(plan);
    return;
  }
  it = c.plans.emplace(key, PlanCache::Entry{std::move(plan), {}}).first;
  c.lru.push_front(&it->first);
  it->second.second = c.lru.begin();
  // A program whose graphs keep changing replaces its plans rather than keeping them all:
  // each holds its kernel loaded (NOTE [Loaded kernels]).
  if (c.plans.size() > max_loaded_kernels()) {
    auto victim = c.plans.find(*c.lru.back());
    c.lru.pop_back();
    c.plans.erase(victim);
  }
}

bool check_plans() {
  static const bool on = env_flag("LOOM_CHECK_PLANS", false);
  return on;
}

bool plans_enabled() {
  static const bool on = env_flag("LOOM_PLANS", true);
  return on;
}

}  // namespace loom
