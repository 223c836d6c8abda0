// A job's runtime limit as people type it: the forms of sbatch --time ("90" minutes, "MM:SS",
// "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS") and amounts with units ("2h", "90m", "3600s",
// "1h30m", "2d"). Becomes the spec's activeDeadlineSeconds. Pure.
#pragma once

#include <string_view>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::model {

// Whole seconds, at least 1 and at most 10 years; InvalidArgument naming the text and the
// accepted forms otherwise.
util::Result<util::Duration> parse_time_limit(std::string_view text);

}  // namespace trainyard::model
