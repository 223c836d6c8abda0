// Stable identifiers of jobs, nodes and teams. Dense integers: cheap to copy, hash and sort,
// and the tie-breaker of last resort everywhere a deterministic order is needed.
#pragma once

#include <cstdint>
#include <string>

#include "util/strong_int.h"

namespace trainyard::util {

using JobId = StrongInt<struct JobIdTag, int64_t>;
using NodeId = StrongInt<struct NodeIdTag, int64_t>;

inline constexpr JobId kNoJob{-1};

// Hands out increasing ids; not thread-safe (one per owner).
template <typename Id>
class IdSequence {
 public:
  explicit IdSequence(typename Id::rep first = 1) : next_(first) {}
  Id next() { return Id(next_++); }

 private:
  typename Id::rep next_;
};

}  // namespace trainyard::util
