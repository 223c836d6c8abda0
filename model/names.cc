#include "model/names.h"

#include <algorithm>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

bool lower_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool alnum(char c) {
  return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

}  // namespace

bool is_job_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameLength || !lower_alnum(s.front()) || !lower_alnum(s.back()))
    return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return lower_alnum(c) || c == '-' || c == '.'; });
}

util::Status check_team_name(std::string_view s) {
  const bool ok = !s.empty() && s.size() <= kMaxNameLength && alnum(s.front()) &&
                  std::all_of(s.begin(), s.end(),
                              [](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
  if (ok) return util::Status::ok();
  // Shown shortened and printable: the name may be 100,000 bytes or hold control characters.
  std::string shown;
  for (char c : s.substr(0, 40)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 40) shown += "...";
  return util::invalid_argument(fmt::format(
      "'{}' is not a team name: use 1 to {} letters, digits, '-', '_' or '.', starting with a "
      "letter or digit",
      shown, kMaxNameLength));
}

}  // namespace trainyard::model
