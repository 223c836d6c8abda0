#include "model/slurm_conf_lines.h"

#include <cctype>

#include <fmt/format.h>

namespace trainyard::model {
namespace {

// Drops a '#' comment ("\#" is a literal '#') and trailing blanks and '\r'.
std::string strip_comment(std::string_view raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && raw[i + 1] == '#') {
      out += '#';
      ++i;
    } else if (raw[i] == '#') {
      break;
    } else {
      out += raw[i];
    }
  }
  while (!out.empty() && (out.back() == '\r' || out.back() == ' ' || out.back() == '\t')) {
    out.pop_back();
  }
  return out;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

util::Status SlurmConfLineReader::error(int line, std::string_view msg) const {
  return util::invalid_argument(fmt::format("{}:{}: {}", file_, line, msg));
}

util::Result<std::optional<SlurmConfLine>> SlurmConfLineReader::next() {
  while (pos_ < text_.size()) {
    SlurmConfLine out;
    out.line = line_ + 1;
    std::string joined;
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string::npos) end = text_.size();
      std::string part = strip_comment(std::string_view(text_).substr(pos_, end - pos_));
      pos_ = end + 1;
      ++line_;
      const bool continued = !part.empty() && part.back() == '\\';
      if (continued) part.pop_back();
      joined += part;
      if (!continued) break;
      joined += ' ';
    }
    TY_RETURN_IF_ERROR(split_words(joined, out));
    if (!out.words.empty()) return std::optional<SlurmConfLine>(std::move(out));
  }
  return std::optional<SlurmConfLine>();
}

util::Status SlurmConfLineReader::split_words(std::string_view s, SlurmConfLine& out) const {
  size_t i = 0;
  while (true) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i >= s.size()) break;
    const size_t key_start = i;
    while (i < s.size() && !is_space(s[i]) && s[i] != '=') ++i;
    std::string key = lower(s.substr(key_start, i - key_start));
    std::string value;
    if (i < s.size() && s[i] == '=') {
      ++i;
      if (i < s.size() && s[i] == '"') {
        const size_t close = s.find('"', i + 1);
        if (close == std::string_view::npos)
          return error(out.line, fmt::format("the value of {} opens a '\"' that is not closed",
                                             s.substr(key_start, i - 1 - key_start)));
        value = std::string(s.substr(i + 1, close - i - 1));
        i = close + 1;
      } else {
        const size_t start = i;
        while (i < s.size() && !is_space(s[i])) ++i;
        value = std::string(s.substr(start, i - start));
      }
    } else if (out.words.empty()) {
      out.has_equals = false;
    }
    out.words.emplace_back(std::move(key), std::move(value));
  }
  return util::Status::ok();
}

}  // namespace trainyard::model
