#include "util/csv_table.h"

#include "util/read_file.h"

namespace trainyard::util {

Result<CsvTable> CsvTable::read_rows(CsvReader& reader) {
  CsvTable table;
  table.name_ = reader.name();
  table.header_ = reader.header();
  while (reader.next()) {
    TY_RETURN_IF_ERROR(reader.row_status());
    std::vector<std::string>& row = table.rows_.emplace_back();
    row.reserve(reader.field_count());
    for (size_t col = 0; col < reader.field_count(); ++col) {
      row.emplace_back(reader.field(static_cast<int>(col)));
    }
    table.lines_.push_back(reader.line());
  }
  return table;
}

Result<CsvTable> CsvTable::parse(std::string_view text, std::string name,
                                 const CsvOptions& options) {
  CsvReader reader = CsvReader::over(text, std::move(name), options);
  TY_RETURN_IF_ERROR(reader.read_header());
  return read_rows(reader);
}

Result<CsvTable> CsvTable::parse_rows(std::string_view text, std::string name,
                                      const CsvOptions& options) {
  CsvReader reader = CsvReader::over(text, std::move(name), options);
  return read_rows(reader);
}

Result<CsvTable> CsvTable::read_file(const std::string& path, const CsvOptions& options) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path));
  return parse(text, path, options);
}

Result<int> CsvTable::require_column(std::string_view header) const {
  const int col = find_column(header);
  if (col >= 0) return col;
  return missing_column(name_, header_, header);
}

std::string_view CsvTable::field(size_t row, int col) const {
  const auto& r = rows_[row];
  if (col < 0 || static_cast<size_t>(col) >= r.size()) return {};
  return r[static_cast<size_t>(col)];
}

Status CsvTable::bad_value(size_t row, int col, std::string_view what, std::string_view fix) const {
  const std::string column = static_cast<size_t>(col) < header_.size()
                                 ? "column '" + header_[static_cast<size_t>(col)] + "'"
                                 : "field " + std::to_string(col + 1);
  return invalid_argument(name_ + ":" + std::to_string(lines_[row]) + ": " + column + " must be " +
                          std::string(what) + ", got \"" + std::string(field(row, col)) + "\" (" +
                          std::string(fix) + ")");
}

}  // namespace trainyard::util
