#include "util/clock.h"

#include <ctime>

#include <fmt/format.h>

#include "util/status.h"

namespace trainyard::util {

Time WallClock::now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

Duration WallClock::steady_now() {
  return std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now().time_since_epoch());
}

void VirtualClock::advance_to(Time t) {
  TY_CHECK_MSG(t >= now_, "virtual time cannot move backwards");
  now_ = t;
}

std::string format_time(Time t) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(t - kEpoch).count();
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_time_ms(Time t) {
  std::string text = format_time(t);
  const int64_t ms = (t - kEpoch).count() / 1000 % 1000;
  text.insert(text.size() - 1, fmt::format(".{:03d}", ms < 0 ? ms + 1000 : ms));
  return text;
}

}  // namespace trainyard::util
