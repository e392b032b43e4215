// A vector of trivially copyable values that keeps up to N of them inline.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace loom {

// NOTE [Inline shapes]: every op's shapes, views and strides were std::vectors, and a tiny
// op built and dropped about fourteen of them (the result's shape, its view, the copies a
// node lookup makes before it finds the node already interned): half of the 28 heap
// allocations `x + 1` made, where eager made 9. Shapes of up to kInline dims now live in
// the object; longer ones go to the heap as before. The interface is std::vector's, minus
// what Loom does not use; a std::vector converts implicitly both ways.
template <class T, unsigned N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVec copies its values with memcpy");

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
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { take(o); }
  ~SmallVec() { release(); }

  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
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
    const size_t n = size_t(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = uint32_t(n);
  }
  void assign(size_t n, const T& v) {
    size_ = 0;
    resize(n, v);
  }

  T* data() { return heap() ? heap_ : inline_; }
  const T* data() const { return heap() ? heap_ : inline_; }
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
    if (size_) std::memcpy(p, data(), size_ * sizeof(T));
    release();
    heap_ = p;
    cap_ = uint32_t(cap);
  }
  void resize(size_t n) { resize(n, T()); }
  void resize(size_t n, const T& v) {
    reserve(n);
    std::fill(data() + std::min<size_t>(size_, n), data() + n, v);
    size_ = uint32_t(n);
  }
  void clear() { size_ = 0; }
  void push_back(const T& v) {
    const T copy = v;  // v may be an element of this vector
    reserve(size_ + 1);
    data()[size_++] = copy;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() { --size_; }

  T* insert(const T* pos, const T& v) { return insert(pos, size_t(1), v); }
  T* insert(const T* pos, size_t n, const T& v) {
    const T copy = v;
    T* p = open_gap(pos, n);
    std::fill(p, p + n, copy);
    return p;
  }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  T* insert(const T* pos, It first, It last) {
    const SmallVec tmp(first, last);  // the range may lie in this vector
    T* p = open_gap(pos, tmp.size());
    std::copy(tmp.begin(), tmp.end(), p);
    return p;
  }
  T* insert(const T* pos, std::initializer_list<T> l) { return insert(pos, l.begin(), l.end()); }
  T* erase(const T* pos) { return erase(pos, pos + 1); }
  T* erase(const T* first, const T* last) {
    T* f = begin() + (first - begin());
    const size_t n = size_t(last - first);
    std::memmove(f, f + n, size_t(end() - (f + n)) * sizeof(T));
    size_ -= uint32_t(n);
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
  void release() {
    if (heap()) ::operator delete(heap_);
    cap_ = N;
  }
  // Leaves o empty and inline.
  void take(SmallVec& o) {
    size_ = o.size_;
    if (o.heap()) {
      heap_ = o.heap_;
      cap_ = o.cap_;
    } else if (size_) {
      std::memcpy(inline_, o.inline_, size_ * sizeof(T));
    }
    o.cap_ = N;
    o.size_ = 0;
  }
  T* open_gap(const T* pos, size_t n) {
    const size_t at = size_t(pos - begin());
    reserve(size_ + n);
    T* p = data() + at;
    std::memmove(p + n, p, (size_ - at) * sizeof(T));
    size_ += uint32_t(n);
    return p;
  }
  [[noreturn]] static T& throw_range();

  union {
    T inline_[N];
    T* heap_;
  };
  uint32_t size_ = 0;
  uint32_t cap_ = N;  // above N: heap_ holds the values
};

template <class T, unsigned N>
T& SmallVec<T, N>::throw_range() {
  throw std::out_of_range("SmallVec::at");
}

}  // namespace loom
