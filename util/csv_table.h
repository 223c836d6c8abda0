// A CSV file held as rows for random access and several passes (price catalogs, spot traces),
// read by CsvReader with the same quoting and located errors. Rows are looked up by index and
// columns by header name or index; bad_value() words a field's error with its file and line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/csv_reader.h"
#include "util/status.h"

namespace trainyard::util {

class CsvTable {
 public:
  // Parses `text` with a header row; `name` (usually the file path) prefixes every error.
  static Result<CsvTable> parse(std::string_view text, std::string name,
                                const CsvOptions& options = {});
  static Result<CsvTable> read_file(const std::string& path, const CsvOptions& options = {});
  // Every non-blank row is a data row (no header; columns by index): for files whose header
  // row is optional, where the caller decides whether row 0 is one. Never fails on an empty text.
  static Result<CsvTable> parse_rows(std::string_view text, std::string name,
                                     const CsvOptions& options = {});

  const std::string& name() const { return name_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t row_count() const { return rows_.size(); }
  // Column index by header name, or -1 when the file has no such column.
  int find_column(std::string_view header) const { return util::find_column(header_, header); }
  // Like find_column, but a missing column is an error naming the columns the file has.
  Result<int> require_column(std::string_view header) const;
  // The field, or "" when the row is shorter than the header (trailing empty fields).
  std::string_view field(size_t row, int col) const;
  // Fields the row has as written (may differ from the header's count).
  size_t field_count(size_t row) const { return rows_[row].size(); }
  // 1-based line of a data row in the source text, for error messages.
  int line(size_t row) const { return lines_[row]; }
  // "name:line: column 'x' must be <what>, got "value" (<fix>)"; "field N" without a header.
  Status bad_value(size_t row, int col, std::string_view what, std::string_view fix) const;

 private:
  static Result<CsvTable> read_rows(CsvReader& reader);

  std::string name_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

}  // namespace trainyard::util
