// SmallVec (NOTE [Inline shapes]): values inline up to N, on the heap past it, with
// std::vector's behaviour either way.
#include "core/small_vec.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace loom {
namespace {

using Vec = SmallVec<int64_t, 4>;

std::vector<int64_t> as_vector(const Vec& v) { return std::vector<int64_t>(v); }

TEST(SmallVec, GrowsPastInlineAndKeepsValues) {
  Vec v;
  for (int64_t i = 0; i < 10; ++i) {
    v.push_back(i * 3);
    ASSERT_EQ(v.size(), size_t(i + 1));
    ASSERT_EQ(v.back(), i * 3);
  }
  EXPECT_GE(v.capacity(), 10u);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(v[size_t(i)], i * 3);
}

TEST(SmallVec, PushBackOfOwnElementWhileGrowing) {
  Vec v{1, 2, 3, 4};  // full inline: the push moves the values to the heap
  v.push_back(v[0]);
  v.push_back(v.back());
  EXPECT_EQ(as_vector(v), (std::vector<int64_t>{1, 2, 3, 4, 1, 1}));
}

TEST(SmallVec, CopiesAndMovesInlineAndHeap) {
  for (size_t n : {0u, 3u, 4u, 9u}) {
    Vec a;
    for (size_t i = 0; i < n; ++i) a.push_back(int64_t(i) + 7);
    Vec b = a;
    EXPECT_EQ(a, b);
    Vec c = std::move(b);
    EXPECT_EQ(a, c);
    EXPECT_TRUE(b.empty());  // NOLINT: a moved-from SmallVec is empty and usable
    b.push_back(5);
    EXPECT_EQ(b.size(), 1u);
    Vec d{9, 9, 9, 9, 9, 9};
    d = c;
    EXPECT_EQ(d, a);
    d = std::move(c);
    EXPECT_EQ(d, a);
  }
}

TEST(SmallVec, InsertEraseResizeAsVector) {
  Vec v{1, 2, 3};
  std::vector<int64_t> w{1, 2, 3};
  v.insert(v.begin() + 1, 8);
  w.insert(w.begin() + 1, 8);
  v.insert(v.end(), {4, 5});
  w.insert(w.end(), {4, 5});
  v.insert(v.begin(), v.begin() + 2, v.end());  // a range from the vector itself
  const std::vector<int64_t> tail(w.begin() + 2, w.end());
  w.insert(w.begin(), tail.begin(), tail.end());
  EXPECT_EQ(v, w);
  v.erase(v.begin() + 1, v.begin() + 3);
  w.erase(w.begin() + 1, w.begin() + 3);
  v.erase(v.begin());
  w.erase(w.begin());
  EXPECT_EQ(v, w);
  v.resize(12, -1);
  w.resize(12, -1);
  EXPECT_EQ(v, w);
  v.resize(2);
  w.resize(2);
  EXPECT_EQ(v, w);
  EXPECT_TRUE(Vec({1, 2}) < Vec({1, 3}));
  EXPECT_TRUE(Vec({1, 2}) == std::vector<int64_t>({1, 2}));
  EXPECT_THROW(v.at(5), std::out_of_range);
}

// Values with their own lifetimes (a node's sources) are constructed and destroyed once.
TEST(SmallVec, SharedPointersKeepTheirCounts) {
  auto p = std::make_shared<int>(1);
  {
    SmallVec<std::shared_ptr<int>, 3> v;
    for (int i = 0; i < 7; ++i) v.push_back(p);  // past inline: moved to the heap
    EXPECT_EQ(p.use_count(), 8);
    auto c = v;
    EXPECT_EQ(p.use_count(), 15);
    auto m = std::move(c);
    EXPECT_EQ(p.use_count(), 15);
    m.erase(m.begin(), m.begin() + 4);
    EXPECT_EQ(p.use_count(), 11);
    m.resize(1);
    EXPECT_EQ(p.use_count(), 9);
    SmallVec<std::shared_ptr<int>, 3> small{p, p};
    EXPECT_EQ(p.use_count(), 11);
    auto moved = std::move(small);  // inline: moved element by element
    EXPECT_EQ(p.use_count(), 11);
    moved.pop_back();
    EXPECT_EQ(p.use_count(), 10);
    std::vector<std::shared_ptr<int>> src{p, p};
    SmallVec<std::shared_ptr<int>, 3> from(std::move(src));
    EXPECT_EQ(p.use_count(), 12);
  }
  EXPECT_EQ(p.use_count(), 1);
}

}  // namespace
}  // namespace loom
