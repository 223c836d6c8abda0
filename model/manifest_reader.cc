#include "model/internal/manifest_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "model/label_selector.h"

namespace trainyard::model::internal {
namespace {

constexpr size_t kMaxShownChars = 60;

std::string join_path(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

std::string joined(std::initializer_list<std::string_view> words) {
  std::string out;
  for (auto w : words) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::string closest_match(std::string_view word, std::initializer_list<std::string_view> allowed) {
  // A prefixed name written without its prefix ("gpu" for "nvidia.com/gpu") is the likelier
  // meaning than a short name a letter away ("cpu").
  for (auto candidate : allowed) {
    if (candidate.size() > word.size() + 1 && candidate.ends_with(word) &&
        candidate[candidate.size() - word.size() - 1] == '/')
      return std::string(candidate);
  }
  std::string best;
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
  for (auto candidate : allowed) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string describe(const YAML::Node& n) {
  if (n.IsNull()) return "nothing";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  if (!n.IsScalar()) return "nothing";
  const std::string& text = n.Scalar();
  size_t shown = std::min(text.size(), kMaxShownChars);
  while (shown < text.size() && (static_cast<unsigned char>(text[shown]) & 0xC0) == 0x80) --shown;
  std::string out = "\"";
  for (size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + (shown < text.size() ? "...\"" : "\"");
}

size_t invalid_utf8_at(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0Fu;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07u;
    } else {
      return i;
    }
    if (i + len > text.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    constexpr uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

util::Status ManifestReader::error_at(const YAML::Node& at, std::string_view msg) const {
  const YAML::Mark m = at.Mark();
  if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file_, msg));
  return util::invalid_argument(fmt::format("{}:{}: {}", file_, m.line + 1, msg));
}

util::Status ManifestReader::error(const Field& at, std::string_view msg) const {
  return error_at(at.value.Mark().is_null() ? at.key : at.value, msg);
}

util::Status ManifestReader::invalid(const Field& f, std::string_view want,
                                     std::string_view fix) const {
  std::string msg = fmt::format("{} must be {}, got {}", f.path, want, describe(f.value));
  if (!fix.empty()) msg += fmt::format(" ({})", fix);
  return error(f, msg);
}

util::Status ManifestReader::missing(const Field& parent, std::string_view name,
                                     std::string_view fix) const {
  return error_at(parent.key,
                  fmt::format("{} is required ({})", join_path(parent.path, name), fix));
}

util::Result<std::vector<Field>> ManifestReader::entries(const Field& map) const {
  if (!map.value.IsMap()) return invalid(map, "a mapping of name: value");
  std::vector<Field> out;
  std::map<std::string, int, std::less<>> first_line;
  for (const auto& kv : map.value) {
    Field key{map.path, kv.first, kv.first};
    if (!kv.first.IsScalar())
      return error(key, map.path.empty() ? std::string("field names must be strings")
                                         : fmt::format("{}: names must be strings", map.path));
    const std::string& name = kv.first.Scalar();
    const int line = kv.first.Mark().line + 1;
    if (auto [it, fresh] = first_line.emplace(name, line); !fresh) {
      return error(key, fmt::format("field \"{}\" is given twice (first on line {})",
                                    join_path(map.path, name), it->second));
    }
    out.push_back({join_path(map.path, name), kv.first, kv.second});
  }
  return out;
}

util::Status ManifestReader::unknown_field(const Field& f,
                                           std::initializer_list<std::string_view> allowed) const {
  const std::string hint = closest_match(f.key.Scalar(), allowed);
  const std::string did_you_mean = hint.empty() ? "" : fmt::format("did you mean \"{}\"?; ", hint);
  return error_at(f.key, fmt::format("unknown field \"{}\" ({}allowed: {})", f.path, did_you_mean,
                                     joined(allowed)));
}

util::Result<Fields> ManifestReader::fields(const Field& map,
                                            std::initializer_list<std::string_view> allowed) const {
  TY_ASSIGN_OR_RETURN(std::vector<Field> all, entries(map));
  Fields out;
  for (Field& f : all) {
    const std::string name = f.key.Scalar();
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
      return unknown_field(f, allowed);
    out.emplace(name, std::move(f));
  }
  return out;
}

util::Result<std::vector<Field>> ManifestReader::items(const Field& list,
                                                       std::string_view example) const {
  if (!list.value.IsSequence()) return invalid(list, "a list", example);
  std::vector<Field> out;
  size_t idx = 0;
  for (const auto& item : list.value) {
    out.push_back({fmt::format("{}[{}]", list.path, idx++), item, item});
  }
  return out;
}

util::Result<std::string> ManifestReader::string(const Field& f) const {
  if (!f.value.IsScalar()) return invalid(f, "a string");
  if (f.value.Scalar().find('\0') != std::string::npos)
    return invalid(f, "a string without NUL characters");
  return f.value.Scalar();
}

util::Result<int64_t> ManifestReader::integer(const Field& f, int64_t lo, int64_t hi,
                                              std::string_view fix) const {
  const std::string want = fmt::format("a whole number from {} to {}", lo, hi);
  if (!f.value.IsScalar()) return invalid(f, want, fix);
  std::string_view text = f.value.Scalar();
  if (text.starts_with('+')) text.remove_prefix(1);
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v < lo || v > hi)
    return invalid(f, want, fix);
  return v;
}

util::Result<bool> ManifestReader::boolean(const Field& f) const {
  if (f.value.IsScalar()) {
    const std::string& s = f.value.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  return invalid(f, "true or false");
}

util::Result<std::vector<std::string>> ManifestReader::string_list(const Field& f) const {
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
  TY_ASSIGN_OR_RETURN(std::vector<Field> list, items(f, ""));
  std::vector<std::string> out;
  for (const Field& item : list) {
    TY_ASSIGN_OR_RETURN(std::string s, string(item));
    out.push_back(std::move(s));
  }
  return out;
}

util::Status ManifestReader::label(const Field& parent, const Field& entry, Labels& out) const {
  const std::string& key = entry.key.Scalar();
  if (!is_valid_label_key(key)) {
    return error_at(entry.key, fmt::format("{}: \"{}\" is not a valid label key (an optional DNS "
                                           "prefix and \"/\", then a name of up to 63 letters, "
                                           "digits, \"-\", \"_\" or \".\")",
                                           parent.path, key));
  }
  std::string value;
  if (!entry.value.IsNull()) {
    TY_ASSIGN_OR_RETURN(value, string(entry));
  }
  if (!is_valid_label_value(value)) {
    return invalid(entry,
                   "a label value: up to 63 letters, digits, \"-\", \"_\" or \".\", "
                   "starting and ending with a letter or digit");
  }
  out[key] = std::move(value);
  return util::Status::ok();
}

util::Result<Labels> ManifestReader::labels(const Field& f) const {
  TY_ASSIGN_OR_RETURN(std::vector<Field> all, entries(f));
  Labels out;
  for (const Field& e : all) TY_RETURN_IF_ERROR(label(f, e, out));
  return out;
}

}  // namespace trainyard::model::internal
