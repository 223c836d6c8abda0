#include "cloud/csv_table.h"

#include "util/read_file.h"

namespace trainyard::cloud {
namespace {

// Splits one record starting at `pos`; quoted fields may hold commas, doubled quotes and
// newlines. Advances `pos` past the record and `line` by the newlines consumed.
util::Status split_record(std::string_view text, size_t& pos, int& line,
                          std::vector<std::string>& out, const std::string& name) {
  out.clear();
  std::string field;
  bool quoted = false;
  const int start_line = line;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"' && pos < text.size() && text[pos] == '"') {
        field += '"';
        ++pos;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      ++line;
      break;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) {
    return util::invalid_argument(name + ":" + std::to_string(start_line) +
                                  ": unterminated quoted field (close the '\"')");
  }
  out.push_back(std::move(field));
  return util::Status::ok();
}

bool is_blank(const std::vector<std::string>& record) {
  return record.size() == 1 && record[0].empty();
}

}  // namespace

util::Result<CsvTable> CsvTable::parse(std::string_view text, std::string name) {
  TY_ASSIGN_OR_RETURN(CsvTable table, parse_rows(text, std::move(name)));
  if (table.rows_.empty()) {
    return util::invalid_argument(table.name_ + ":1: empty file (expected a header row)");
  }
  table.header_ = std::move(table.rows_.front());
  table.rows_.erase(table.rows_.begin());
  table.lines_.erase(table.lines_.begin());
  return table;
}

util::Result<CsvTable> CsvTable::parse_rows(std::string_view text, std::string name) {
  CsvTable table;
  table.name_ = std::move(name);
  size_t pos = 0;
  int line = 1;
  std::vector<std::string> record;
  while (pos < text.size()) {
    const int record_line = line;
    TY_RETURN_IF_ERROR(split_record(text, pos, line, record, table.name_));
    if (is_blank(record)) continue;
    table.rows_.push_back(record);
    table.lines_.push_back(record_line);
  }
  return table;
}

util::Result<CsvTable> CsvTable::read_file(const std::string& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path));
  return parse(text, path);
}

int CsvTable::find_column(std::string_view header) const {
  for (size_t col = 0; col < header_.size(); ++col) {
    if (header_[col] == header) return static_cast<int>(col);
  }
  return -1;
}

util::Result<int> CsvTable::require_column(std::string_view header) const {
  const int col = find_column(header);
  if (col >= 0) return col;
  std::string have;
  for (const auto& h : header_) have += (have.empty() ? "" : ",") + h;
  return util::invalid_argument(name_ + ":1: missing column '" + std::string(header) +
                                "' (the header has: " + have + ")");
}

std::string_view CsvTable::field(size_t row, int col) const {
  const auto& r = rows_[row];
  if (col < 0 || static_cast<size_t>(col) >= r.size()) return {};
  return r[static_cast<size_t>(col)];
}

util::Status CsvTable::bad_value(size_t row, int col, std::string_view what,
                                 std::string_view fix) const {
  const std::string column = static_cast<size_t>(col) < header_.size()
                                 ? "column '" + header_[static_cast<size_t>(col)] + "'"
                                 : "field " + std::to_string(col + 1);
  return util::invalid_argument(name_ + ":" + std::to_string(lines_[row]) + ": " + column +
                                " must be " + std::string(what) + ", got \"" +
                                std::string(field(row, col)) + "\" (" + std::string(fix) + ")");
}

}  // namespace trainyard::cloud
