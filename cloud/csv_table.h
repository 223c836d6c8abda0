// A minimal CSV reader for price catalogs and spot traces: a header row (or none), RFC 4180
// quoting, fields looked up by header name or index, and errors that name the file and line. The
// whole text is held in memory (the largest catalog file is about 0.4 MB). sim/ has a similar
// reader that cloud/ may not include.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::cloud {

class CsvTable {
 public:
  // Parses `text`; `name` (usually the file path) prefixes every error message.
  static util::Result<CsvTable> parse(std::string_view text, std::string name);
  static util::Result<CsvTable> read_file(const std::string& path);
  // Every non-blank record is a data row (no header; columns by index): for files whose header
  // row is optional, where the caller decides whether row 0 is one. Never fails on an empty text.
  static util::Result<CsvTable> parse_rows(std::string_view text, std::string name);

  const std::string& name() const { return name_; }
  size_t row_count() const { return rows_.size(); }
  // Column index by header name, or -1 when the file has no such column.
  int find_column(std::string_view header) const;
  // Like find_column, but a missing column is an error naming the columns the file has.
  util::Result<int> require_column(std::string_view header) const;
  // The field, or "" when the row is shorter than the header (trailing empty fields).
  std::string_view field(size_t row, int col) const;
  // Fields the row has as written (may differ from the header's count).
  size_t field_count(size_t row) const { return rows_[row].size(); }
  // 1-based line of a data row in the source text, for error messages.
  int line(size_t row) const { return lines_[row]; }
  // "name:line: column 'x' must be <what>, got "value" (<fix>)"; "field N" without a header.
  util::Status bad_value(size_t row, int col, std::string_view what, std::string_view fix) const;

 private:
  std::string name_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

}  // namespace trainyard::cloud
