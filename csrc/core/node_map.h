// Maps and sets keyed by node address for one walk of the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/node.h"

namespace loom {

// NOTE [Node maps]: fusion keeps several memos keyed by node address per kernel it fuses
// (hundreds per training step). As std::unordered_map, each entry was a heap node: in a
// GPT step, fusion's own time was 32% malloc and free and 19% hash-table code. A NodeMap
// is one array probed linearly from a multiplicative hash of the address, grown at half
// full; entries are never erased. A reference to a value lives until the next insertion
// (which may move every entry), unlike std::unordered_map's.
template <typename V>
class NodeMap {
 public:
  NodeMap() = default;
  NodeMap(const NodeMap&) = delete;
  NodeMap& operator=(const NodeMap&) = delete;
  ~NodeMap() { give_back(std::move(slots_)); }

  V* find(const Node* key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = slot_of(key);; i = (i + 1) & mask()) {
      if (slots_[i].first == key) return &slots_[i].second;
      if (!slots_[i].first) return nullptr;
    }
  }
  const V* find(const Node* key) const { return const_cast<NodeMap*>(this)->find(key); }
  bool count(const Node* key) const { return find(key) != nullptr; }

  // The value of `key`, inserted as V{} when absent.
  V& operator[](const Node* key) { return *emplace(key, V{}).first; }

  // Inserts (key, value) when key is absent; returns the key's value and whether it was.
  std::pair<V*, bool> emplace(const Node* key, V value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = slot_of(key);
    for (; slots_[i].first; i = (i + 1) & mask())
      if (slots_[i].first == key) return {&slots_[i].second, false};
    slots_[i] = {key, std::move(value)};
    ++size_;
    return {&slots_[i].second, true};
  }

  size_t size() const { return size_; }

 private:
  size_t mask() const { return slots_.size() - 1; }
  size_t slot_of(const Node* key) const {
    // Fibonacci hashing: the top bits of the product, so aligned addresses spread.
    uint64_t h = uint64_t(reinterpret_cast<uintptr_t>(key)) * 0x9E3779B97F4A7C15ull;
    return size_t(h >> shift_);
  }
  using Slots = std::vector<std::pair<const Node*, V>>;

  // Arrays of maps gone, emptied, for the next maps of this thread: most maps live for
  // one fusion, and growing each from nothing allocated again every time.
  static std::vector<Slots>& spares() {
    thread_local std::vector<Slots> s;
    return s;
  }
  static Slots take(size_t n) {
    std::vector<Slots>& sp = spares();
    for (size_t i = 0; i < sp.size(); ++i)
      if (sp[i].size() == n) {
        Slots v = std::move(sp[i]);
        if (i + 1 != sp.size()) sp[i] = std::move(sp.back());
        sp.pop_back();
        return v;
      }
    return Slots(n);
  }
  // Only small arrays are kept, and a few: a thread keeps at most kSpares * kSpareSlots
  // entries' room per value type.
  static constexpr size_t kSpares = 16, kSpareSlots = 1024;
  static void give_back(Slots v) {
    std::vector<Slots>& sp = spares();
    if (v.empty() || v.size() > kSpareSlots || sp.size() >= kSpares) return;
    for (auto& e : v)
      if (e.first) e = {};
    sp.push_back(std::move(v));
  }

  void grow() {
    Slots old = std::move(slots_);
    const size_t n = old.empty() ? 32 : 2 * old.size();
    slots_ = take(n);
    shift_ = 64;
    for (size_t k = n; k > 1; k >>= 1) --shift_;
    size_ = 0;
    for (auto& [key, value] : old)
      if (key) emplace(key, std::move(value));
    give_back(std::move(old));
  }

  Slots slots_;
  size_t size_ = 0;
  int shift_ = 64;
};

// A set of node addresses (NOTE [Node maps]).
class NodeSet {
 public:
  // True when `key` was not in the set.
  bool insert(const Node* key) { return map_.emplace(key, true).second; }
  bool count(const Node* key) const { return map_.count(key); }
  size_t size() const { return map_.size(); }

 private:
  NodeMap<bool> map_;
};

}  // namespace loom
