#include "sim/csv_reader.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "util/read_file.h"

namespace trainyard::sim {

util::Result<CsvReader> CsvReader::open(const std::string& path) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return CsvReader(std::move(text), path);
}

CsvReader CsvReader::from_string(std::string text, std::string name) {
  return CsvReader(std::move(text), std::move(name));
}

CsvReader CsvReader::from_string_unquoted(std::string text, std::string name, char separator) {
  CsvReader out(std::move(text), std::move(name));
  out.separator_ = separator;
  out.quoting_ = false;
  return out;
}

void CsvReader::split_unquoted(std::string_view line) {
  if (line.ends_with('\r')) line.remove_suffix(1);
  size_t start = 0;
  while (true) {
    const size_t sep = line.find(separator_, start);
    fields_.emplace_back(
        line.substr(start, sep == std::string_view::npos ? line.npos : sep - start));
    if (sep == std::string_view::npos) break;
    start = sep + 1;
  }
}

util::Status CsvReader::read_header() {
  if (!next())
    return util::invalid_argument(
        fmt::format("{}: the file is empty; expected a header row", name_));
  if (!row_status_.is_ok()) return row_status_;
  header_ = fields_;
  for (auto& h : header_) {
    while (!h.empty() && (h.back() == ' ' || h.back() == '\r')) h.pop_back();
    while (!h.empty() && h.front() == ' ') h.erase(h.begin());
  }
  if (!header_.empty() && header_[0].starts_with("\xEF\xBB\xBF")) header_[0].erase(0, 3);
  return util::Status::ok();
}

bool CsvReader::has_column(std::string_view name) const {
  for (const auto& h : header_) {
    if (h == name) return true;
  }
  return false;
}

util::Result<int> CsvReader::column(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  std::string have;
  for (const auto& h : header_) have += (have.empty() ? "" : ", ") + h;
  return util::invalid_argument(
      fmt::format("{}:1: missing column '{}' (the header has: {})", name_, name, have));
}

bool CsvReader::split_line(std::string_view line) {
  fields_.clear();
  if (!quoting_) {
    split_unquoted(line);
    return true;
  }
  std::string cur;
  bool quoted = false;
  bool was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"' && cur.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields_.push_back(std::move(cur));
      cur.clear();
      was_quoted = false;
    } else if (c == '\r' && i + 1 == line.size()) {
      // CRLF line ending
    } else {
      cur += c;
    }
  }
  fields_.push_back(std::move(cur));
  return !quoted;
}

bool CsvReader::next() {
  row_status_ = util::Status::ok();
  while (pos_ < text_.size()) {
    size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) end = text_.size();
    std::string_view line(text_.data() + pos_, end - pos_);
    pos_ = end + 1;
    ++line_;
    if (line.empty() || line == "\r") continue;
    if (!split_line(line)) {
      row_status_ = util::invalid_argument(fmt::format(
          "{}:{}: unterminated quoted field (a '\"' is not closed on this line)", name_, line_));
    } else if (!header_.empty() && fields_.size() != header_.size()) {
      row_status_ =
          util::invalid_argument(fmt::format("{}:{}: expected {} fields as in the header, found {}",
                                             name_, line_, header_.size(), fields_.size()));
    }
    return true;
  }
  return false;
}

std::string_view CsvReader::field(int col) const {
  if (col < 0 || static_cast<size_t>(col) >= fields_.size()) return {};
  return fields_[col];
}

util::Status CsvReader::error_at(int col, std::string_view message) const {
  const std::string col_name =
      col >= 0 && static_cast<size_t>(col) < header_.size() ? header_[col] : std::string("?");
  return util::invalid_argument(
      fmt::format("{}:{}:{}: column '{}': {}", name_, line_, col + 1, col_name, message));
}

util::Result<double> CsvReader::get_double(int col) const {
  std::string_view f = field(col);
  double v = 0;
  auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || !std::isfinite(v)) {
    return error_at(col, fmt::format("expected a number, got '{}'", f));
  }
  return v;
}

util::Result<int64_t> CsvReader::get_int(int col) const {
  std::string_view f = field(col);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || ec != std::errc() || ptr != f.data() + f.size()) {
    // Accept integral floats such as "4.0".
    auto d = get_double(col);
    if (d.is_ok() && *d == std::floor(*d) && std::abs(*d) < 9e15) return static_cast<int64_t>(*d);
    return error_at(col, fmt::format("expected a whole number, got '{}'", f));
  }
  return v;
}

}  // namespace trainyard::sim
