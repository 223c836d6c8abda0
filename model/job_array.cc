#include "model/job_array.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

constexpr std::string_view kExamples =
    "write indices such as 0-99, 1,3,5 or 0-15:4, and %N to "
    "run at most N at once (0-99%10)";

util::Status bad(std::string_view text, std::string_view problem) {
  return util::invalid_argument(fmt::format("\"{}\": {}", text, problem));
}

// A whole number 0..hi, digits only (no sign, no spaces).
util::Result<int> number(std::string_view whole, std::string_view s, std::string_view what,
                         int hi) {
  int value = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  const bool digits =
      !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || ec != std::errc() || p != s.data() + s.size())
    return bad(whole, fmt::format("{} \"{}\" is not a whole number; {}", what, s, kExamples));
  if (value > hi)
    return bad(whole, fmt::format("{} {} is above the largest allowed, {}", what, s, hi));
  return value;
}

// One comma-separated item: "7", "0-99" or "0-15:4"; appends its indices to `out`.
util::Status add_item(std::string_view whole, std::string_view item, std::vector<int>& out) {
  if (item.empty()) return bad(whole, fmt::format("an empty item between commas; {}", kExamples));
  int step = 1;
  if (const size_t colon = item.find(':'); colon != std::string_view::npos) {
    TY_ASSIGN_OR_RETURN(step, number(whole, item.substr(colon + 1), "the step", kMaxArrayIndex));
    if (step == 0) return bad(whole, "a step must be at least 1 (0-15:4 takes every 4th index)");
    item = item.substr(0, colon);
    if (item.find('-') == std::string_view::npos)
      return bad(whole, fmt::format("a step needs a range: write {}-<last>:{}", item, step));
  }
  const size_t dash = item.find('-');
  TY_ASSIGN_OR_RETURN(const int first,
                      number(whole, item.substr(0, dash), "the index", kMaxArrayIndex));
  int last = first;
  if (dash != std::string_view::npos) {
    TY_ASSIGN_OR_RETURN(last, number(whole, item.substr(dash + 1), "the index", kMaxArrayIndex));
    if (last < first)
      return bad(whole, fmt::format("the range {}-{} ends before it starts; write the smaller "
                                    "index first ({}-{})",
                                    first, last, last, first));
  }
  const int64_t count = (int64_t{last} - first) / step + 1;
  if (static_cast<int64_t>(out.size()) + count > kMaxArrayTasks)
    return bad(whole, fmt::format("too many tasks: at most {} per array; split the array or "
                                  "use a step (0-99999:10)",
                                  kMaxArrayTasks));
  for (int64_t idx = first; idx <= last; idx += step) out.push_back(static_cast<int>(idx));
  return util::Status::ok();
}

}  // namespace

util::Result<ArraySpec> parse_array_spec(std::string_view text) {
  if (text.empty()) return util::invalid_argument(fmt::format("an empty array; {}", kExamples));
  ArraySpec spec;
  std::string_view list = text;
  if (const size_t pct = text.find('%'); pct != std::string_view::npos) {
    TY_ASSIGN_OR_RETURN(spec.limit,
                        number(text, text.substr(pct + 1), "the limit after %", kMaxArrayTasks));
    if (spec.limit == 0)
      return bad(text, "%0 would never run a task; %N runs at most N at once (N >= 1)");
    list = text.substr(0, pct);
  }
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(list.find(',', start), list.size());
    TY_RETURN_IF_ERROR(add_item(text, list.substr(start, comma - start), spec.indices));
    if (comma == list.size()) break;
    start = comma + 1;
  }
  std::sort(spec.indices.begin(), spec.indices.end());
  spec.indices.erase(std::unique(spec.indices.begin(), spec.indices.end()), spec.indices.end());
  return spec;
}

std::string array_task_name(std::string_view base, int index) {
  return fmt::format("{}-{}", base, index);
}

size_t array_name_suffix_length(const ArraySpec& spec) {
  if (spec.indices.empty()) return 0;
  return 1 + std::to_string(spec.indices.back()).size();
}

}  // namespace trainyard::model
