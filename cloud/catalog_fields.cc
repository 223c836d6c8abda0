#include "cloud/catalog_fields.h"

#include <charconv>
#include <cmath>
#include <string>

namespace trainyard::cloud::internal {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a finite decimal; nullopt on anything else (text, trailing junk, inf, nan).
std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

util::Result<std::optional<double>> read_price(const util::CsvTable& t, size_t row, int col) {
  if (col < 0 || trim(t.field(row, col)).empty()) return std::optional<double>{};
  auto v = parse_number(t.field(row, col));
  if (!v || *v < 0) {
    return t.bad_value(row, col, "a non-negative price in USD per hour",
                       "write a number like 3.06, or leave it empty when not offered");
  }
  if (*v == 0) return std::optional<double>{};
  return std::optional<double>(*v);
}

util::Result<double> read_amount(const util::CsvTable& t, size_t row, int col, bool allow_empty) {
  if (allow_empty && trim(t.field(row, col)).empty()) return 0.0;
  auto v = parse_number(t.field(row, col));
  if (!v || *v < 0) {
    return t.bad_value(row, col, "a non-negative number", "write a number like 96 or 1152.0");
  }
  return *v;
}

util::Result<double> read_gpu_count(const util::CsvTable& t, size_t row, int col) {
  auto v = parse_number(t.field(row, col));
  if (!v || *v <= 0 || *v > 1024) {
    return t.bad_value(row, col, "a GPU count > 0", "write a count like 8 or 8.0");
  }
  return *v;
}

std::optional<int> whole_gpus(double count) {
  if (count < 1 || std::floor(count) != count) return std::nullopt;
  return static_cast<int>(count);
}

util::Result<std::string> read_text(const util::CsvTable& t, size_t row, int col) {
  auto s = trim(t.field(row, col));
  if (s.empty()) return t.bad_value(row, col, "non-empty", "fill in the value");
  return std::string(s);
}

}  // namespace trainyard::cloud::internal
