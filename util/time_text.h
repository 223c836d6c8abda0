// Times and durations as users type them: RFC 3339 times ("2026-11-26T10:00:00Z",
// "2026-11-26T11:00:00.5+01:00") and Go/kubectl durations ("90s", "10m", "1h30m"). Pure.
#pragma once

#include <string_view>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::util {

// InvalidArgument (naming the text and the form expected) for anything else.
Result<Time> parse_rfc3339(std::string_view text);
// A positive sum of <number><unit> with units h, m, s (and ms); InvalidArgument otherwise.
Result<Duration> parse_duration(std::string_view text);

}  // namespace trainyard::util
