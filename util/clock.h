// The one source of time. Time is microseconds since the Unix epoch on a std::chrono
// time_point; WallClock reads the system clock, VirtualClock is driven by the simulator.
// Nothing outside util/ may call std::chrono::*_clock::now(); components receive a Clock&.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace trainyard::util {

using Duration = std::chrono::microseconds;
using Time = std::chrono::time_point<std::chrono::system_clock, Duration>;

inline constexpr Time kEpoch{};
constexpr Duration seconds(int64_t s) {
  return std::chrono::seconds(s);
}
constexpr Duration seconds_f(double s) {
  return Duration(static_cast<int64_t>(s * 1e6 + (s >= 0 ? 0.5 : -0.5)));
}
constexpr double to_seconds(Duration d) {
  return static_cast<double>(d.count()) / 1e6;
}
constexpr Time from_seconds(double s) {
  return kEpoch + seconds_f(s);
}
constexpr double to_seconds(Time t) {
  return to_seconds(t - kEpoch);
}
constexpr Time from_millis(int64_t ms) {
  return kEpoch + std::chrono::milliseconds(ms);
}
// The start of the minute that holds `t` (UTC minutes: the epoch is on one).
constexpr Time minute_of(Time t) {
  return kEpoch + std::chrono::floor<std::chrono::minutes>(t - kEpoch);
}
// Milliseconds since the epoch, cut toward minus infinity (the wire form of sample times).
constexpr int64_t to_millis(Time t) {
  return std::chrono::floor<std::chrono::milliseconds>(t - kEpoch).count();
}

// "2017-10-09T07:01:55Z" style rendering of a time, UTC.
std::string format_time(Time t);
// "2017-10-09T07:01:55.123Z": format_time with milliseconds, the form of every time the API shows.
// Before 1970 the seconds and the milliseconds are each cut toward the epoch, then the
// milliseconds shown as their distance up from a whole second (-0.25 s: "...T00:00:00.750Z").
std::string format_time_ms(Time t);

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time now() const = 0;
};

class WallClock final : public Clock {
 public:
  Time now() const override;
  // Monotonic reading for measuring elapsed time (benchmarks, progress); not a date.
  static Duration steady_now();
};

// Time moves only when told to. Thread-compatible.
class VirtualClock final : public Clock {
 public:
  explicit VirtualClock(Time start = kEpoch) : now_(start) {}
  Time now() const override { return now_; }
  // Moves time forward; moving backwards is a programming error.
  void advance_to(Time t);

 private:
  Time now_;
};

}  // namespace trainyard::util
