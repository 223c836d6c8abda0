#include "util/csv_reader.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "util/read_file.h"

namespace trainyard::util {
namespace {

// Position of `c` in text[from, to), or `to`. memchr keeps the common rows (no quotes) fast.
size_t find_in(std::string_view text, char c, size_t from, size_t to) {
  if (from >= to) return to;
  const void* hit = std::memchr(text.data() + from, c, to - from);
  return hit ? static_cast<size_t>(static_cast<const char*>(hit) - text.data()) : to;
}

// End of the line starting at `from`: the '\n' or the end of the text.
size_t line_end(std::string_view text, size_t from) {
  return find_in(text, '\n', from, text.size());
}

// `end` less a '\r' just before it (CRLF line ends).
size_t without_cr(std::string_view text, size_t begin, size_t end) {
  return end > begin && text[end - 1] == '\r' ? end - 1 : end;
}

}  // namespace

CsvReader::CsvReader(std::string owned, std::string_view borrowed, bool owns, std::string name,
                     const CsvOptions& options)
    : owned_(std::move(owned)),
      borrowed_(borrowed),
      owns_(owns),
      name_(std::move(name)),
      options_(options) {}

Result<CsvReader> CsvReader::open(const std::string& path, const CsvOptions& options) {
  TY_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return from_string(std::move(text), path, options);
}

CsvReader CsvReader::from_string(std::string text, std::string name, const CsvOptions& options) {
  return CsvReader(std::move(text), {}, true, std::move(name), options);
}

CsvReader CsvReader::over(std::string_view text, std::string name, const CsvOptions& options) {
  return CsvReader({}, text, false, std::move(name), options);
}

Status CsvReader::read_header() {
  if (!next()) {
    return invalid_argument(fmt::format("{}:1: the file is empty; expected a header row", name_));
  }
  if (!row_status_.is_ok()) return row_status_;
  header_.clear();
  for (size_t col = 0; col < spans_.size(); ++col) {
    std::string_view h = field(static_cast<int>(col));
    while (!h.empty() && (h.back() == ' ' || h.back() == '\r')) h.remove_suffix(1);
    while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
    header_.emplace_back(h);
  }
  if (!header_.empty() && header_[0].starts_with("\xEF\xBB\xBF")) header_[0].erase(0, 3);
  return Status::ok();
}

int find_column(std::span<const std::string> header, std::string_view column) {
  for (size_t col = 0; col < header.size(); ++col) {
    if (header[col] == column) return static_cast<int>(col);
  }
  return -1;
}

Status missing_column(std::string_view file, std::span<const std::string> header,
                      std::string_view column) {
  std::string have;
  for (const auto& h : header) have += (have.empty() ? "" : ", ") + h;
  return invalid_argument(
      fmt::format("{}:1: missing column '{}' (the header has: {})", file, column, have));
}

Result<int> CsvReader::column(std::string_view name) const {
  const int col = find_column(name);
  if (col >= 0) return col;
  return missing_column(name_, header_, name);
}

void CsvReader::split_unquoted(std::string_view text, size_t begin, size_t end) {
  while (true) {
    const size_t sep = find_in(text, options_.separator, begin, end);
    spans_.push_back({.begin = begin, .size = sep - begin});
    if (sep == end) return;
    begin = sep + 1;
  }
}

// Appends the quoted field starting after its opening quote at `pos` to scratch_, unescaping
// "" to ". Returns the position after the closing quote; `closed` is false when there is none.
// With multiline_fields, line ends inside the quotes are kept and `end` moves to the end of
// the line where the field closes.
size_t CsvReader::read_quoted(std::string_view text, size_t pos, size_t& end, bool& closed) {
  while (true) {
    const size_t quote = find_in(text, '"', pos, end);
    if (quote == end) {
      if (!options_.multiline_fields || end >= text.size()) {
        closed = false;
        return end;
      }
      scratch_.append(text, pos, end + 1 - pos);  // the line end belongs to the field
      pos = end + 1;
      end = line_end(text, pos);
      pos_ = end + 1;
      ++next_line_;
      continue;
    }
    scratch_.append(text, pos, quote - pos);
    if (quote + 1 < end && text[quote + 1] == '"') {
      scratch_ += '"';
      pos = quote + 2;
      continue;
    }
    closed = true;
    return quote + 1;
  }
}

// A field is quoted only when it starts with '"'; a quote elsewhere is a plain character, and
// text after the closing quote up to the separator is kept as written (as Python's csv does).
bool CsvReader::split_quoted(std::string_view text, size_t begin, size_t end) {
  size_t content_end = without_cr(text, begin, end);
  size_t pos = begin;
  while (true) {
    if (pos < content_end && text[pos] == '"') {
      const size_t start = scratch_.size();
      bool closed = false;
      pos = read_quoted(text, pos + 1, end, closed);
      if (!closed) return false;
      content_end = without_cr(text, pos, end);  // `end` moved if the field ran over lines
      const size_t sep = find_in(text, options_.separator, pos, content_end);
      if (sep > pos) scratch_.append(text, pos, sep - pos);
      spans_.push_back({.begin = start, .size = scratch_.size() - start, .in_scratch = true});
      if (sep == content_end) return true;
      pos = sep + 1;
    } else {
      const size_t sep = find_in(text, options_.separator, pos, content_end);
      spans_.push_back({.begin = pos, .size = sep - pos});
      if (sep == content_end) return true;
      pos = sep + 1;
    }
  }
}

bool CsvReader::next() {
  row_status_ = Status::ok();
  const std::string_view t = text();
  while (pos_ < t.size()) {
    const size_t begin = pos_;
    const size_t end = line_end(t, begin);
    pos_ = end + 1;
    line_ = next_line_++;
    const size_t content_end = without_cr(t, begin, end);
    if (content_end == begin) continue;  // blank line
    spans_.clear();
    scratch_.clear();
    bool closed = true;
    if (options_.quoting && find_in(t, '"', begin, content_end) != content_end) {
      closed = split_quoted(t, begin, end);
    } else {
      split_unquoted(t, begin, content_end);
    }
    if (!closed) {
      const char* where =
          options_.multiline_fields ? "is never closed" : "is not closed on this line";
      row_status_ = invalid_argument(
          fmt::format("{}:{}: unterminated quoted field (a '\"' {})", name_, line_, where));
    } else if (options_.strict_field_count && !header_.empty() && spans_.size() != header_.size()) {
      row_status_ =
          invalid_argument(fmt::format("{}:{}: expected {} fields as in the header, found {}",
                                       name_, line_, header_.size(), spans_.size()));
    }
    return true;
  }
  return false;
}

std::string_view CsvReader::field(int col) const {
  if (col < 0 || static_cast<size_t>(col) >= spans_.size()) return {};
  const Span& s = spans_[static_cast<size_t>(col)];
  const std::string_view from = s.in_scratch ? std::string_view(scratch_) : text();
  return {from.data() + s.begin, s.size};
}

Status CsvReader::error_at(int col, std::string_view message) const {
  const std::string col_name =
      col >= 0 && static_cast<size_t>(col) < header_.size() ? header_[col] : std::string("?");
  return invalid_argument(
      fmt::format("{}:{}:{}: column '{}': {}", name_, line_, col + 1, col_name, message));
}

Result<double> CsvReader::get_double(int col) const {
  const std::string_view f = field(col);
  double v = 0;
  auto [ptr, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (f.empty() || ec != std::errc() || ptr != f.data() + f.size() || !std::isfinite(v)) {
    return error_at(col, fmt::format("expected a number, got '{}'", f));
  }
  return v;
}

Result<int64_t> CsvReader::get_int(int col) const {
  const std::string_view f = field(col);
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

}  // namespace trainyard::util
