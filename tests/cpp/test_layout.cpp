#include <gtest/gtest.h>

#include "core/layout.h"

namespace loom {
namespace {

TEST(Layout, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides({}), Shape{});
  EXPECT_EQ(contiguous_strides({5}), (Shape{1}));
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
  // Size-1 and size-0 dims get the strides PyTorch gives them.
  EXPECT_EQ(contiguous_strides({3, 1, 2}), (Shape{2, 2, 1}));
  EXPECT_EQ(contiguous_strides({2, 0, 3}), (Shape{3, 3, 1}));
}

TEST(Layout, ViewContiguous) {
  View v = View::contiguous({2, 3}, 7);
  EXPECT_EQ(v.sizes, (Shape{2, 3}));
  EXPECT_EQ(v.strides, (Shape{3, 1}));
  EXPECT_EQ(v.offset, 7);
  EXPECT_EQ(v.ndim(), 2);
  EXPECT_EQ(v.numel(), 6);
  EXPECT_EQ(View::contiguous({}).numel(), 1);
  EXPECT_EQ(View::contiguous({4, 0}).numel(), 0);
}

TEST(Layout, IsContiguous) {
  EXPECT_TRUE(is_contiguous(View::contiguous({2, 3, 4})));
  EXPECT_TRUE(is_contiguous(View::contiguous({2, 3}, 5)));
  EXPECT_FALSE(is_contiguous(View{{2, 3}, {1, 2}, 0}));  // a transpose
  EXPECT_FALSE(is_contiguous(View{{3}, {2}, 0}));        // a step-2 slice
  // Strides of size-1 dims do not matter; neither do any strides of an empty view.
  EXPECT_TRUE(is_contiguous(View{{2, 1, 3}, {3, 100, 1}, 0}));
  EXPECT_TRUE(is_contiguous(View{{0, 3}, {1, 7}, 0}));
  EXPECT_TRUE(is_contiguous(View{{}, {}, 4}));
}

TEST(Layout, IsDenseCover) {
  EXPECT_TRUE(is_dense_cover(View::contiguous({2, 3}), 6));
  EXPECT_TRUE(is_dense_cover(View{{3, 2}, {1, 3}, 0}, 6));       // a permutation
  EXPECT_FALSE(is_dense_cover(View::contiguous({2, 3}), 7));     // misses an element
  EXPECT_FALSE(is_dense_cover(View::contiguous({2, 3}, 1), 7));  // not at offset 0
  EXPECT_FALSE(is_dense_cover(View{{2, 3}, {0, 1}, 0}, 6));      // overlaps itself
  EXPECT_FALSE(is_dense_cover(View{{3}, {2}, 0}, 6));            // strided, with gaps
}

TEST(Layout, ComposeThrough) {
  View store = View::contiguous({6, 8});
  // A transposed, sliced read: coordinates (1 + 2j, i) of the store.
  auto m = compose_through(store, View{{8, 3}, {1, 16}, 8});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->offs, (Shape{1, 0}));
  EXPECT_EQ(m->dim_of, (std::vector<int>{1, 0}));
  EXPECT_EQ(m->mult, (Shape{1, 2}));
  // A flip of dim 0 walks it backwards from row 5.
  auto f = compose_through(store, View{{6, 8}, {-8, 1}, 40});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->offs, (Shape{5, 0}));
  EXPECT_EQ(f->mult, (Shape{-1, 1}));
  // Walking backwards past row 0, or forwards past the last row, is not a store read.
  EXPECT_FALSE(compose_through(store, View{{7, 8}, {-8, 1}, 40}).has_value());
  EXPECT_FALSE(compose_through(store, View{{2, 8}, {24, 1}, 32}).has_value());
}

}  // namespace
}  // namespace loom
