#include "model/slurm_hostlist.h"

#include <charconv>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

// Splits at commas outside brackets.
util::Result<std::vector<std::string_view>> split_top_level(std::string_view list) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1)
      return util::invalid_argument(fmt::format("unbalanced brackets in '{}'", list));
    if (c == ',' && depth == 0) {
      if (i == start) return util::invalid_argument(fmt::format("empty name in '{}'", list));
      out.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return util::invalid_argument(fmt::format("unbalanced brackets in '{}'", list));
  return out;
}

util::Result<int64_t> bound(std::string_view digits, std::string_view range) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || digits.size() > 12 || ec != std::errc() ||
      ptr != digits.data() + digits.size()) {
    return util::invalid_argument(
        fmt::format("'{}' is not a range like 1-4 or 01-16 of whole numbers", range));
  }
  return v;
}

// "01-03,7" -> "01", "02", "03", "7". The width of a range's lower bound is kept (Slurm's rule).
util::Status expand_ranges(std::string_view ranges, size_t max_names,
                           std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= ranges.size()) {
    size_t comma = ranges.find(',', start);
    if (comma == std::string_view::npos) comma = ranges.size();
    const std::string_view range = ranges.substr(start, comma - start);
    const size_t dash = range.find('-');
    const std::string_view lo_text = range.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
    TY_ASSIGN_OR_RETURN(const int64_t lo, bound(lo_text, range));
    TY_ASSIGN_OR_RETURN(const int64_t hi, bound(hi_text, range));
    if (hi < lo) return util::invalid_argument(fmt::format("range '{}' runs backwards", range));
    if (out.size() >= max_names || static_cast<uint64_t>(hi - lo) >= max_names - out.size()) {
      return util::invalid_argument(
          fmt::format("'[{}]' names more than {} nodes", ranges, max_names));
    }
    const int width =
        lo_text.size() > 1 && lo_text[0] == '0' ? static_cast<int>(lo_text.size()) : 0;
    for (int64_t v = lo; v <= hi; ++v) {
      out.push_back(width > 0 ? fmt::format("{:0{}}", v, width) : std::to_string(v));
    }
    start = comma + 1;
  }
  return util::Status::ok();
}

// One comma-free expression: a prefix, then [ranges] and text, any number of times.
util::Status expand_one(std::string_view expr, size_t max_names, std::vector<std::string>& out) {
  std::vector<std::string> names = {""};
  size_t pos = 0;
  while (pos < expr.size()) {
    const size_t open = expr.find('[', pos);
    const std::string_view text =
        expr.substr(pos, open == std::string_view::npos ? expr.npos : open - pos);
    for (auto& n : names) n += text;
    if (open == std::string_view::npos) break;
    const size_t close = expr.find(']', open);
    if (close == std::string_view::npos)
      return util::invalid_argument(fmt::format("unbalanced brackets in '{}'", expr));
    std::vector<std::string> values;
    TY_RETURN_IF_ERROR(expand_ranges(expr.substr(open + 1, close - open - 1), max_names, values));
    if (names.size() * values.size() + out.size() > max_names)
      return util::invalid_argument(fmt::format("'{}' names more than {} nodes", expr, max_names));
    std::vector<std::string> next;
    next.reserve(names.size() * values.size());
    for (const auto& n : names) {
      for (const auto& v : values) next.push_back(n + v);
    }
    names = std::move(next);
    pos = close + 1;
  }
  for (auto& n : names) out.push_back(std::move(n));
  return util::Status::ok();
}

}  // namespace

util::Result<std::vector<std::string>> expand_hostlist(std::string_view list, size_t max_names) {
  TY_ASSIGN_OR_RETURN(const auto parts, split_top_level(list));
  std::vector<std::string> out;
  for (std::string_view part : parts) TY_RETURN_IF_ERROR(expand_one(part, max_names, out));
  return out;
}

}  // namespace trainyard::model
