// The project's one CSV reader: RFC 4180 quoting, a header row looked up by column name, and
// errors that name file, line and column ("jobs.csv:12:3: column 'gpus': ..."). It walks a text
// held in memory one row at a time; CsvTable (csv_table.h) keeps all rows for random access.
// Thread-compatible. Field views stay valid until the next call to next().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::util {

struct CsvOptions {
  char separator = ',';
  // Double quotes enclose a field (at its start) and "" inside one is a quote. Off for formats
  // that never quote, such as Slurm's `sacct --parsable2` output ('|'-separated).
  bool quoting = true;
  // A quoted field may run over line ends (RFC 4180). Off, an unclosed quote is an error on its
  // own line, so one broken row of a trace stays one bad row.
  bool multiline_fields = false;
  // Every row must have as many fields as the header. Off, a row may be shorter (missing fields
  // read as "") or longer (extra fields are ignored), as price catalogs need.
  bool strict_field_count = true;
};

// Files written by spreadsheets and exporters (price catalogs, spot traces): quoted fields may
// run over lines and rows may be ragged.
inline constexpr CsvOptions kLenientCsv{.multiline_fields = true, .strict_field_count = false};

// Index of `column` in `header`, or -1.
int find_column(std::span<const std::string> header, std::string_view column);
// "file:1: missing column 'x' (the header has: a, b)".
Status missing_column(std::string_view file, std::span<const std::string> header,
                      std::string_view column);

class CsvReader {
 public:
  static Result<CsvReader> open(const std::string& path, const CsvOptions& options = {});
  // Owns `text`; `name` (usually the file path) starts every error message.
  static CsvReader from_string(std::string text, std::string name, const CsvOptions& options = {});
  // Borrows `text`, which must outlive the reader (reading a header without copying a file).
  static CsvReader over(std::string_view text, std::string name, const CsvOptions& options = {});

  // Reads the header row (names trimmed of blanks, a UTF-8 byte order mark dropped); call once
  // before next(), or never for a file without a header.
  Status read_header();
  const std::vector<std::string>& header() const { return header_; }
  // Index of a header column, or InvalidArgument naming the columns the file has.
  Result<int> column(std::string_view name) const;
  // Index of a header column, or -1.
  int find_column(std::string_view name) const { return util::find_column(header_, name); }
  bool has_column(std::string_view name) const { return find_column(name) >= 0; }

  // Advances to the next row, skipping blank lines; false at the end of the text. A malformed
  // row (bad quoting, a field count unlike the header's) is reported through row_status().
  bool next();
  const Status& row_status() const { return row_status_; }
  // 1-based line where the current row starts.
  int line() const { return line_; }
  size_t field_count() const { return spans_.size(); }
  // The field, or "" past the row's end.
  std::string_view field(int col) const;

  Result<double> get_double(int col) const;
  // A whole number; integral decimals such as "4.0" are accepted.
  Result<int64_t> get_int(int col) const;
  // "name:line:column: column 'x': message" for the current row.
  Status error_at(int col, std::string_view message) const;
  const std::string& name() const { return name_; }

 private:
  // Where a field lies: in the text, or in scratch_ when quoting changed it.
  struct Span {
    size_t begin = 0;
    size_t size = 0;
    bool in_scratch = false;
  };

  CsvReader(std::string owned, std::string_view borrowed, bool owns, std::string name,
            const CsvOptions& options);
  std::string_view text() const { return owns_ ? std::string_view(owned_) : borrowed_; }
  void split_unquoted(std::string_view text, size_t begin, size_t end);
  bool split_quoted(std::string_view text, size_t begin, size_t end);
  size_t read_quoted(std::string_view text, size_t pos, size_t& end, bool& closed);

  std::string owned_;
  std::string_view borrowed_;
  bool owns_ = true;
  std::string name_;
  CsvOptions options_;
  size_t pos_ = 0;
  int line_ = 0;
  int next_line_ = 1;
  std::vector<std::string> header_;
  std::vector<Span> spans_;
  std::string scratch_;
  Status row_status_;
};

}  // namespace trainyard::util
