// Slurm hostlist expressions as slurm.conf writes node names: "gpu[01-16]" (zero padding kept),
// "n[1-4,7]", "a[1-2]b[1-2]" (every combination) and comma-separated lists of those.
// Pure; errors carry no location (the caller adds file:line).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::model {

// The names `list` stands for, in order. InvalidArgument for unbalanced brackets, bad ranges, or
// more than `max_names` names (a typo such as n[1-1000000000] must not take the memory).
util::Result<std::vector<std::string>> expand_hostlist(std::string_view list, size_t max_names);

}  // namespace trainyard::model
