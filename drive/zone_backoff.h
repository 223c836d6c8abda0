// Where a cloud pool may buy next, one rule for both drivers: a zone that reclaimed a node or
// refused a request is avoided for a while, and the pool is out of capacity only while every
// one of its zones is. It works on the simulator's snapshot pools and the server's fleet pools
// alike: anything with zones[i].blocked_until and unavailable_until.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>

#include "util/clock.h"

namespace trainyard::drive {

template <class Pool>
concept ZonedPool = requires(Pool& p, size_t i) {
  { p.zones.size() } -> std::convertible_to<size_t>;
  { p.zones[i].blocked_until } -> std::same_as<util::Time&>;
  { p.unavailable_until } -> std::same_as<util::Time&>;
};

// A node in `zone` is being reclaimed: capacity there is being taken back, so the replacement
// is bought elsewhere until `until`.
template <ZonedPool Pool>
void block_zone(Pool& pool, int zone, util::Time until) {
  if (zone >= 0 && zone < static_cast<int>(pool.zones.size()))
    pool.zones[zone].blocked_until = until;
}

// A request in `zone` was refused for want of capacity at `t`: that zone waits `retry` and the
// others are tried; the pool is out (until its first zone reopens) once all of them wait, and
// for `retry` when it has no zones.
template <ZonedPool Pool>
void refuse_zone(Pool& pool, int zone, util::Time t, util::Duration retry) {
  if (zone < 0 || zone >= static_cast<int>(pool.zones.size())) {
    pool.unavailable_until = t + retry;
    return;
  }
  pool.zones[zone].blocked_until = std::max(pool.zones[zone].blocked_until, t + retry);
  util::Time reopen = util::Time::max();
  for (const auto& z : pool.zones) reopen = std::min(reopen, z.blocked_until);
  if (reopen > t) pool.unavailable_until = reopen;
}

}  // namespace trainyard::drive
