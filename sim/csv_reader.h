// A small CSV reader for trace files: header row, RFC 4180 quoting, fields looked up by column
// name, and errors that name file, line and column. Reads the whole file into memory (the
// largest bundled trace is 3.4 MB); rows are views into that buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::sim {

class CsvReader {
 public:
  static util::Result<CsvReader> open(const std::string& path);
  static CsvReader from_string(std::string text, std::string name);
  // Fields split at `separator` with no quoting: Slurm's `sacct --parsable2` output ('|').
  static CsvReader from_string_unquoted(std::string text, std::string name, char separator);

  // Reads the header row; call once before next().
  util::Status read_header();
  // Index of a header column, or NotFound naming the columns the file has.
  util::Result<int> column(std::string_view name) const;
  bool has_column(std::string_view name) const;
  // Advances to the next non-empty row; false at end of file. A malformed row (bad quoting)
  // is reported through row_status().
  bool next();
  const util::Status& row_status() const { return row_status_; }
  int line() const { return line_; }
  size_t field_count() const { return fields_.size(); }
  std::string_view field(int col) const;

  util::Result<double> get_double(int col) const;
  util::Result<int64_t> get_int(int col) const;
  // "file:line:column: message" for the current row.
  util::Status error_at(int col, std::string_view message) const;
  const std::string& name() const { return name_; }

 private:
  CsvReader(std::string text, std::string name) : text_(std::move(text)), name_(std::move(name)) {}
  void split_unquoted(std::string_view line);
  bool split_line(std::string_view line);

  std::string text_;
  std::string name_;
  char separator_ = ',';
  bool quoting_ = true;
  size_t pos_ = 0;
  int line_ = 0;
  std::vector<std::string> header_;
  std::vector<std::string> fields_;
  util::Status row_status_;
};

}  // namespace trainyard::sim
