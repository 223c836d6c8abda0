// Job arrays in Slurm's --array syntax: "0-99%10" (a range, at most 10 tasks running at once),
// "1,3,5" (a list), "0-15:4" (a range with a step), and combinations "0-3,10-20:5%2". An array
// submission becomes one job per index, named NAME-<index> (docs/job-spec.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::model {

// At most this many tasks per array (Slurm's MaxArraySize defaults to 1001; a sweep of a few
// thousand runs is common, tens of thousands of jobs in one request is a mistake).
inline constexpr int kMaxArrayTasks = 10000;
// Indices are 0..kMaxArrayIndex, so a task name adds at most 7 characters ("-999999").
inline constexpr int kMaxArrayIndex = 999999;

struct ArraySpec {
  std::vector<int> indices;  // ascending, each once
  int limit = 0;             // %N: at most N tasks running at once; 0 = no limit

  bool operator==(const ArraySpec&) const = default;
};

// Parses Slurm's array syntax. InvalidArgument naming the bad part and the fix, e.g.
// "\"5-2\": the range 5-2 ends before it starts; write the smaller index first (2-5)".
util::Result<ArraySpec> parse_array_spec(std::string_view text);

// "NAME-7": the name of task `index` of an array submitted as `base`.
std::string array_task_name(std::string_view base, int index);

// Characters the longest task name of `spec` adds to the submitted name ("-" and the digits).
size_t array_name_suffix_length(const ArraySpec& spec);

}  // namespace trainyard::model
