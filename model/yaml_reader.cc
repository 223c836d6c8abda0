#include "model/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

std::string joined(std::span<const std::string_view> words) {
  std::string out;
  for (auto w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// [+-]?digits without a leading zero (YAML 1.1 reads "010" as octal 8, YAML 1.2 as 10: neither
// guess is safe) and without a base prefix, exponent or fraction.
std::optional<int64_t> plain_integer(std::string_view text) {
  if (text.starts_with('+') || text.starts_with('-')) {
    if (text.size() < 2 || !is_digit(text[1])) return std::nullopt;
  }
  const std::string_view digits = text.substr(text.starts_with('+') || text.starts_with('-'));
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit)) return std::nullopt;
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;
  if (text.starts_with('+')) text.remove_prefix(1);
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// A decimal number as YAML writes one: [+-]?digits[.digits][e[+-]digits], or .5; no hex,
// no inf or nan.
std::optional<double> plain_number(std::string_view text) {
  std::string_view t = text;
  if (t.starts_with('+') || t.starts_with('-')) t.remove_prefix(1);
  if (t.empty() || !(is_digit(t.front()) || (t.front() == '.' && t.size() > 1 && is_digit(t[1]))))
    return std::nullopt;
  if (t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X' || t[1] == 'o'))
    return std::nullopt;
  double v = 0;
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  const auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

}  // namespace

util::Status YamlReader::error_at(const YAML::Mark& m, std::string_view msg) const {
  if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file_, msg));
  return util::invalid_argument(fmt::format("{}:{}:{}: {}", file_, m.line + 1, m.column + 1, msg));
}

util::Status YamlReader::error_at(const YAML::Node& at, std::string_view msg) const {
  return error_at(at.IsDefined() ? at.Mark() : YAML::Mark::null_mark(), msg);
}

util::Status YamlReader::error(const YamlField& at, std::string_view msg) const {
  const bool placed = at.value.IsDefined() && !at.value.Mark().is_null();
  return error_at(placed ? at.value : at.key, msg);
}

util::Status YamlReader::invalid(const YamlField& f, std::string_view want,
                                 std::string_view fix) const {
  std::string msg = fmt::format("{} must be {}, got {}", f.path, want, describe_yaml(f.value));
  if (!fix.empty()) msg += fmt::format(" ({})", fix);
  return error(f, msg);
}

util::Status YamlReader::missing(const YamlField& parent, std::string_view name,
                                 std::string_view fix) const {
  return error_at(parent.key,
                  fmt::format("{} is required ({})", yaml_child_path(parent.path, name), fix));
}

util::Status YamlReader::unknown_field(const YamlField& f,
                                       std::span<const std::string_view> allowed) const {
  const std::string hint = closest_match(f.key.Scalar(), allowed);
  const std::string did_you_mean = hint.empty() ? "" : fmt::format("did you mean \"{}\"?; ", hint);
  return error_at(f.key, fmt::format("unknown field \"{}\" ({}allowed: {})", f.path, did_you_mean,
                                     joined(allowed)));
}

util::Result<std::vector<YamlField>> YamlReader::entries(const YamlField& map,
                                                         std::string_view want) const {
  if (!map.value.IsMap()) return invalid(map, want);
  std::vector<YamlField> out;
  std::map<std::string, YAML::Mark, std::less<>> first;
  for (const auto& kv : map.value) {
    const YamlField key{map.path, kv.first, kv.first};
    if (!kv.first.IsScalar())
      return error(key, map.path.empty() ? std::string("field names must be strings")
                                         : fmt::format("{}: names must be strings", map.path));
    const std::string& name = kv.first.Scalar();
    if (auto [it, fresh] = first.emplace(name, kv.first.Mark()); !fresh) {
      return error(key, fmt::format("field \"{}\" is given twice (first on line {})",
                                    yaml_child_path(map.path, name), it->second.line + 1));
    }
    out.push_back({yaml_child_path(map.path, name), kv.first, kv.second});
  }
  return out;
}

util::Result<YamlFields> YamlReader::fields(const YamlField& map,
                                            std::span<const std::string_view> allowed) const {
  TY_ASSIGN_OR_RETURN(std::vector<YamlField> all, entries(map));
  YamlFields out;
  for (YamlField& f : all) {
    std::string name = f.key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      return unknown_field(f, allowed);
    out.emplace(std::move(name), std::move(f));
  }
  return out;
}

util::Result<std::vector<YamlField>> YamlReader::items(const YamlField& list,
                                                       std::string_view fix) const {
  if (!list.value.IsSequence()) return invalid(list, "a list", fix);
  std::vector<YamlField> out;
  size_t idx = 0;
  for (const auto& item : list.value) {
    out.push_back({fmt::format("{}[{}]", list.path, idx++), item, item});
  }
  return out;
}

util::Result<std::string> YamlReader::string(const YamlField& f) const {
  if (!f.value.IsScalar()) return invalid(f, "a string");
  const std::string& s = f.value.Scalar();
  if (s.find('\0') != std::string::npos) return invalid(f, "a string without NUL characters");
  if (s.size() > limits_.max_string_bytes) {
    return invalid(f, fmt::format("a string of at most {} bytes", limits_.max_string_bytes),
                   fmt::format("it has {} bytes", s.size()));
  }
  return s;
}

util::Result<std::string> YamlReader::non_empty_string(const YamlField& f) const {
  if (!f.value.IsScalar() || f.value.Scalar().empty()) return invalid(f, "a non-empty string");
  return string(f);
}

util::Result<int64_t> YamlReader::integer(const YamlField& f, int64_t lo, int64_t hi,
                                          std::string_view fix) const {
  const std::string want = fmt::format("a whole number from {} to {}", lo, hi);
  const auto v = f.value.IsScalar() ? plain_integer(f.value.Scalar()) : std::nullopt;
  if (!v || *v < lo || *v > hi) return invalid(f, want, fix);
  return *v;
}

util::Result<double> YamlReader::number(const YamlField& f, double lo, double hi,
                                        std::string_view noun, std::string_view fix) const {
  const auto v = f.value.IsScalar() ? plain_number(f.value.Scalar()) : std::nullopt;
  if (!v || *v < lo || *v > hi)
    return invalid(f, fmt::format("{} from {} to {}", noun, lo, hi), fix);
  return *v;
}

util::Result<bool> YamlReader::boolean(const YamlField& f) const {
  if (f.value.IsScalar()) {
    const std::string& s = f.value.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  return invalid(f, "true or false");
}

util::Result<std::vector<std::string>> YamlReader::string_list(const YamlField& f) const {
  if (f.value.IsScalar()) {
    std::string words;
    std::string word;
    for (char c : f.value.Scalar() + " ") {
      if (!std::isspace(static_cast<unsigned char>(c))) {
        word += c;
      } else if (!word.empty()) {
        words += (words.empty() ? "" : ", ") + std::exchange(word, "");
      }
    }
    return invalid(f, "a list", fmt::format("write it as a list: [{}]", words));
  }
  TY_ASSIGN_OR_RETURN(std::vector<YamlField> list, items(f, ""));
  std::vector<std::string> out;
  for (const YamlField& item : list) {
    TY_ASSIGN_OR_RETURN(std::string s, string(item));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace trainyard::model
