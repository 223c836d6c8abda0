// Text helpers of the YAML reader: how a value is shown in an error, the "did you mean"
// suggestion, the UTF-8 check and key paths.
#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "model/yaml_reader.h"

namespace trainyard::model {
namespace {

constexpr size_t kMaxShownChars = 60;

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

std::string closest_match(std::string_view word, std::span<const std::string_view> allowed) {
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

std::string describe_yaml(const YAML::Node& n) {
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

std::string yaml_child_path(std::string_view parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

}  // namespace trainyard::model
