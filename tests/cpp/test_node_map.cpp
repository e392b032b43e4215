// NodeMap and NodeSet (NOTE [Node maps]): lookups through growth, and arrays reused by later
// maps without their entries.
#include <gtest/gtest.h>

#include <vector>

#include "core/graph.h"
#include "core/node_map.h"

namespace {

using loom::NodeMap;
using loom::NodeRef;
using loom::NodeSet;

// Distinct nodes (equal ones are interned: the same node).
std::vector<NodeRef> some_nodes(int n, int first = 0) {
  std::vector<NodeRef> v;
  for (int i = first; i < first + n; ++i)
    v.push_back(loom::constant(loom::Scalar::of_int(i), loom::DType::Int64, {int64_t(i + 1)}));
  return v;
}

TEST(NodeMap, FindsEveryEntryThroughGrowth) {
  std::vector<NodeRef> nodes = some_nodes(1000);
  NodeMap<int> m;
  NodeSet s;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(m.emplace(nodes[size_t(i)].get(), i).second);
    EXPECT_TRUE(s.insert(nodes[size_t(i)].get()));
  }
  EXPECT_EQ(m.size(), 1000u);
  for (int i = 0; i < 1000; ++i) {
    const int* v = m.find(nodes[size_t(i)].get());
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, i);
    EXPECT_FALSE(m.emplace(nodes[size_t(i)].get(), -1).second);  // kept, not replaced
    EXPECT_EQ(*m.find(nodes[size_t(i)].get()), i);
    EXPECT_FALSE(s.insert(nodes[size_t(i)].get()));
  }
  m[nodes[3].get()] = 42;
  EXPECT_EQ(*m.find(nodes[3].get()), 42);
  std::vector<NodeRef> others = some_nodes(1, 1000);
  EXPECT_EQ(m.find(others[0].get()), nullptr);
  EXPECT_FALSE(s.count(others[0].get()));
}

// A map gone releases the values it held, and the next map, on its emptied array, finds
// nothing of it.
TEST(NodeMap, ReusedArraysStartEmpty) {
  std::vector<NodeRef> nodes = some_nodes(100);
  {
    NodeMap<NodeRef> held;
    for (const NodeRef& n : nodes) held[n.get()] = n;
    EXPECT_EQ(nodes[7].use_count(), 2);
  }
  EXPECT_EQ(nodes[7].use_count(), 1);
  for (int round = 0; round < 3; ++round) {
    NodeMap<NodeRef> next;
    for (const NodeRef& n : nodes) EXPECT_EQ(next.find(n.get()), nullptr);
    for (size_t i = 0; i < nodes.size(); i += 2) next[nodes[i].get()] = nodes[i];
    EXPECT_EQ(next.size(), nodes.size() / 2);
    EXPECT_EQ(next.find(nodes[1].get()), nullptr);
  }
}

}  // namespace
