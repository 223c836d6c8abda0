#include "model/label_selector.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

constexpr size_t kMaxName = 63;
constexpr size_t kMaxPrefix = 253;

bool is_alnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

bool is_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxName || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_prefix(std::string_view p) {
  return !p.empty() && p.size() <= kMaxPrefix && is_alnum(p.front()) && is_alnum(p.back()) &&
         std::all_of(p.begin(), p.end(), [](char c) {
           return (is_alnum(c) && !std::isupper(static_cast<unsigned char>(c))) || c == '-' ||
                  c == '.';
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

constexpr const char* kKeyRule =
    "a key is an optional DNS prefix and \"/\", then up to 63 letters, digits, \"-\", \"_\" or "
    "\".\", starting and ending with a letter or digit";
constexpr const char* kValueRule =
    "a value is empty or up to 63 letters, digits, \"-\", \"_\" or \".\", starting and ending "
    "with a letter or digit";

// One comma-separated term; `where` names it in errors ("term 2 'a=b c'").
util::Result<LabelRequirement> parse_term(std::string_view term, const std::string& where) {
  LabelRequirement r;
  std::string_view key = term, value;
  if (const size_t ne = term.find("!="); ne != std::string_view::npos) {
    r.op = LabelRequirement::Op::NotEquals;
    key = term.substr(0, ne);
    value = term.substr(ne + 2);
  } else if (const size_t eq = term.find('='); eq != std::string_view::npos) {
    r.op = LabelRequirement::Op::Equals;
    key = term.substr(0, eq);
    value = term.substr(eq + (term.substr(eq).starts_with("==") ? 2 : 1));
  } else if (term.starts_with("!")) {
    r.op = LabelRequirement::Op::NotExists;
    key = term.substr(1);
  }
  key = trim(key);
  value = trim(value);
  if (key.empty())
    return util::invalid_argument(fmt::format(
        "label selector: {} has no key; write key=value, key!=value, key or !key", where));
  if (!is_valid_label_key(key))
    return util::invalid_argument(
        fmt::format("label selector: {}: \"{}\" is not a label key; {}", where, key, kKeyRule));
  if (value.find_first_of("=!") != std::string_view::npos || !is_valid_label_value(value))
    return util::invalid_argument(fmt::format("label selector: {}: \"{}\" is not a label value; {}",
                                              where, value, kValueRule));
  r.key = std::string(key);
  r.value = std::string(value);
  return r;
}

}  // namespace

bool is_valid_label_key(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return is_name(key);
  return is_prefix(key.substr(0, slash)) && is_name(key.substr(slash + 1));
}

bool is_valid_label_value(std::string_view value) {
  return value.empty() || is_name(value);
}

util::Result<LabelSelector> parse_label_selector(std::string_view text) {
  LabelSelector out;
  if (trim(text).empty()) return out;
  size_t index = 0;
  while (true) {
    ++index;
    const size_t comma = text.find(',');
    const std::string_view raw = text.substr(0, comma);
    const std::string where = fmt::format("term {} '{}'", index, trim(raw));
    if (trim(raw).empty())
      return util::invalid_argument(fmt::format(
          "label selector: term {} is empty; separate terms with single commas", index));
    TY_ASSIGN_OR_RETURN(LabelRequirement r, parse_term(trim(raw), where));
    out.requirements.push_back(std::move(r));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

bool LabelSelector::matches(const Labels& labels) const {
  for (const auto& r : requirements) {
    const auto it = labels.find(r.key);
    const bool has = it != labels.end();
    switch (r.op) {
      case LabelRequirement::Op::Exists:
        if (!has) return false;
        break;
      case LabelRequirement::Op::NotExists:
        if (has) return false;
        break;
      case LabelRequirement::Op::Equals:
        if (!has || it->second != r.value) return false;
        break;
      case LabelRequirement::Op::NotEquals:  // as Kubernetes: a job without the key matches
        if (has && it->second == r.value) return false;
        break;
    }
  }
  return true;
}

std::string LabelSelector::to_string() const {
  std::string out;
  for (const auto& r : requirements) {
    if (!out.empty()) out += ',';
    switch (r.op) {
      case LabelRequirement::Op::Exists:
        out += r.key;
        break;
      case LabelRequirement::Op::NotExists:
        out += "!" + r.key;
        break;
      case LabelRequirement::Op::Equals:
        out += r.key + "=" + r.value;
        break;
      case LabelRequirement::Op::NotEquals:
        out += r.key + "!=" + r.value;
        break;
    }
  }
  return out;
}

util::Result<std::pair<std::string, std::string>> parse_label_assignment(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    return util::invalid_argument(
        fmt::format("--label must be key=value, got '{}' (for example --label team=nlp)", text));
  const std::string_view key = text.substr(0, eq), value = text.substr(eq + 1);
  if (!is_valid_label_key(key))
    return util::invalid_argument(fmt::format("--label '{}': {}", text, kKeyRule));
  if (!is_valid_label_value(value))
    return util::invalid_argument(fmt::format("--label '{}': {}", text, kValueRule));
  return std::pair<std::string, std::string>(key, value);
}

}  // namespace trainyard::model
