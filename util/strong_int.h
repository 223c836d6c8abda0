// Integer strong types: a quantity or id whose unit is part of its type, so GPU counts,
// milli-GPUs, bytes and ids cannot be mixed by accident. Arithmetic only within one type.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace trainyard::util {

template <typename Tag, typename Rep = int64_t>
class StrongInt {
 public:
  using rep = Rep;
  constexpr StrongInt() = default;
  constexpr explicit StrongInt(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }

  constexpr auto operator<=>(const StrongInt&) const = default;
  constexpr StrongInt operator+(StrongInt o) const { return StrongInt(v_ + o.v_); }
  constexpr StrongInt operator-(StrongInt o) const { return StrongInt(v_ - o.v_); }
  constexpr StrongInt& operator+=(StrongInt o) {
    v_ += o.v_;
    return *this;
  }
  constexpr StrongInt& operator-=(StrongInt o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr StrongInt operator*(Rep k) const { return StrongInt(v_ * k); }

 private:
  Rep v_ = 0;
};

}  // namespace trainyard::util

template <typename Tag, typename Rep>
struct std::hash<trainyard::util::StrongInt<Tag, Rep>> {
  size_t operator()(trainyard::util::StrongInt<Tag, Rep> v) const noexcept {
    return std::hash<Rep>()(v.value());
  }
};
