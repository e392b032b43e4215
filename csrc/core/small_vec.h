// A vector that keeps up to N values inline.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace loom {

// NOTE [Inline shapes]: every op's shapes, views and strides were std::vectors, and a tiny
// op built and dropped about fourteen of them (the result's shape, its view, the copies a
// node lookup makes before it finds the node already interned): half of the 28 heap
// allocations `x + 1` made, where eager made 9; three more were the sources of nodes it
// looked up. Shapes of up to 6 dims and a node's first 3 sources now live in the object;
// longer ones go to the heap as before. The interface is std::vector's, minus what Loom
// does not use; a std::vector converts to it implicitly, and back explicitly (an implicit
// conversion would let an ArrayRef point into a temporary).
template <class T, unsigned N>
class SmallVec {
  // Trivially copyable values move as bytes (a whole inline array at once: a fixed size,
  // so no library call); others are constructed and destroyed one by one.
  static constexpr bool kTrivial = std::is_trivially_copyable_v<T>;

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVec() = default;
  explicit SmallVec(size_t n) { resize(n); }
  SmallVec(size_t n, const T& v) { resize(n, v); }
  SmallVec(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  SmallVec(It first, It last) {
    assign(first, last);
  }
  SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: as a vector
  SmallVec(std::vector<T>&& v) {                                      // NOLINT
    reserve(v.size());
    for (T& x : v) new (end()) T(std::move(x)), ++size_;
  }
  SmallVec(const SmallVec& o) { copy_from(o); }
  SmallVec(SmallVec&& o) noexcept { take(o); }
  ~SmallVec() {
    clear();
    release();
  }

  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      clear();
      release();
      take(o);
    }
    return *this;
  }
  SmallVec& operator=(std::initializer_list<T> l) {
    assign(l.begin(), l.end());
    return *this;
  }
  explicit operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

  template <class It>
  void assign(It first, It last) {
    clear();
    reserve(size_t(std::distance(first, last)));
    for (; first != last; ++first) new (end()) T(*first), ++size_;
  }
  void assign(size_t n, const T& v) {
    clear();
    resize(n, v);
  }

  T* data() { return heap() ? heap_ : inl(); }
  const T* data() const { return heap() ? heap_ : inl(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return heap() ? cap_ : N; }

  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  const T* cbegin() const { return begin(); }
  const T* cend() const { return end(); }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& at(size_t i) { return i < size_ ? data()[i] : throw_range(); }
  const T& at(size_t i) const { return i < size_ ? data()[i] : throw_range(); }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity()) return;
    const size_t cap = std::max<size_t>(n, 2 * capacity());
    T* p = static_cast<T*>(::operator new(cap * sizeof(T)));
    move_to(p);
    release();
    heap_ = p;
    cap_ = uint32_t(cap);
  }
  void resize(size_t n) { resize(n, T()); }
  void resize(size_t n, const T& v) {
    if (n < size_) {
      std::destroy(begin() + n, end());
      size_ = uint32_t(n);
      return;
    }
    const T copy = v;  // v may be an element of this vector
    reserve(n);
    while (size_ < n) new (end()) T(copy), ++size_;
  }
  void clear() {
    std::destroy(begin(), end());
    size_ = 0;
  }
  void push_back(const T& v) {
    if (size_ == capacity()) {
      T copy = v;  // v may be an element of this vector
      reserve(size_ + 1);
      new (end()) T(std::move(copy));
    } else {
      new (end()) T(v);
    }
    ++size_;
  }
  void push_back(T&& v) {
    if (size_ == capacity()) {
      T moved = std::move(v);
      reserve(size_ + 1);
      new (end()) T(std::move(moved));
    } else {
      new (end()) T(std::move(v));
    }
    ++size_;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() {
    --size_;
    std::destroy_at(end());
  }

  T* insert(const T* pos, const T& v) { return insert(pos, size_t(1), v); }
  T* insert(const T* pos, size_t n, const T& v) {
    const size_t at = size_t(pos - begin());
    const T copy = v;
    reserve(size_ + n);
    for (size_t i = 0; i < n; ++i) push_back(copy);
    std::rotate(begin() + at, end() - n, end());
    return begin() + at;
  }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  T* insert(const T* pos, It first, It last) {
    const size_t at = size_t(pos - begin());
    const SmallVec tmp(first, last);  // the range may lie in this vector
    reserve(size_ + tmp.size());
    for (const T& x : tmp) push_back(x);
    std::rotate(begin() + at, end() - tmp.size(), end());
    return begin() + at;
  }
  T* insert(const T* pos, std::initializer_list<T> l) { return insert(pos, l.begin(), l.end()); }
  T* erase(const T* pos) { return erase(pos, pos + 1); }
  T* erase(const T* first, const T* last) {
    T* f = begin() + (first - begin());
    T* l = begin() + (last - begin());
    T* e = std::move(l, end(), f);
    std::destroy(e, end());
    size_ -= uint32_t(l - f);
    return f;
  }
  void swap(SmallVec& o) noexcept {
    SmallVec t(std::move(o));
    o = std::move(*this);
    *this = std::move(t);
  }

  friend bool operator==(const SmallVec& a, const SmallVec& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVec& a, const SmallVec& b) { return !(a == b); }
  friend bool operator<(const SmallVec& a, const SmallVec& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SmallVec& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const std::vector<T>& a, const SmallVec& b) { return b == a; }
  friend bool operator!=(const SmallVec& a, const std::vector<T>& b) { return !(a == b); }
  friend bool operator!=(const std::vector<T>& a, const SmallVec& b) { return !(b == a); }

 private:
  bool heap() const { return cap_ > N; }
  T* inl() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inl() const { return std::launder(reinterpret_cast<const T*>(inline_)); }
  // Frees the heap array (its elements already destroyed or moved out).
  void release() {
    if (heap()) ::operator delete(heap_);
    cap_ = N;
  }
  // Moves the elements to p, leaving them destroyed here.
  void move_to(T* p) {
    if constexpr (kTrivial) {
      if (size_) std::memcpy(p, data(), size_ * sizeof(T));
    } else {
      std::uninitialized_move(begin(), end(), p);
      std::destroy(begin(), end());
    }
  }
  // Takes o's elements (this holds none and no heap array); leaves o empty and inline.
  void take(SmallVec& o) {
    if (o.heap()) {
      heap_ = o.heap_;
      cap_ = o.cap_;
    } else if constexpr (kTrivial) {
      std::memcpy(inline_, o.inline_, sizeof(inline_));
    } else {
      o.move_to(inl());
    }
    size_ = o.size_;
    o.cap_ = N;
    o.size_ = 0;
  }
  void copy_from(const SmallVec& o) {
    if constexpr (kTrivial) {
      if (!o.heap()) {
        release();
        std::memcpy(inline_, o.inline_, sizeof(inline_));
        size_ = o.size_;
        return;
      }
    }
    assign(o.begin(), o.end());
  }
  [[noreturn]] static T& throw_range() { throw std::out_of_range("SmallVec::at"); }

  union {
    alignas(T) unsigned char inline_[N * sizeof(T)];
    T* heap_;
  };
  uint32_t size_ = 0;
  uint32_t cap_ = N;  // above N: heap_ holds the values
};

}  // namespace loom
