// Spot trace readers: SkyPilot count series (JSON) and, through spot_trace_csv.cc, Bamboo's CSV
// shapes, into one step-function-plus-reclaims form that simcloud replays. The format is told
// from the content, so a file's extension does not matter.
#include "cloud/spot_trace.h"
#include "util/read_file.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "cloud/internal/spot_trace_parse.h"
#include "util/csv_table.h"

namespace trainyard::cloud {
namespace internal {

void push_step(SpotTrace& t, util::Duration offset, int capacity) {
  if (!t.capacity.empty() && t.capacity.back().capacity == capacity) return;
  if (!t.capacity.empty() && t.capacity.back().offset == offset) {
    t.capacity.back().capacity = capacity;
    return;
  }
  t.capacity.push_back({.offset = offset, .capacity = capacity});
}

void CountSeries::add(util::Duration offset, int count) {
  if (has_pending_ && offset != pending_offset_) {
    commit();
    min_gap_ = std::min(min_gap_, offset - pending_offset_);
  }
  has_pending_ = true;
  pending_offset_ = offset;
  pending_count_ = count;
}

void CountSeries::commit() {
  if (pending_count_ < previous_) {
    trace_.reclaims.push_back({.offset = pending_offset_,
                               .nodes = previous_ - pending_count_,
                               .to_zero = pending_count_ == 0});
  }
  if (trace_.capacity.empty() && pending_offset_ > util::Duration::zero()) {
    push_step(trace_, {}, 0);
  }
  push_step(trace_, pending_offset_, pending_count_);
  previous_ = pending_count_;
}

void CountSeries::finish(util::Duration period) {
  if (!has_pending_) return;
  commit();
  has_pending_ = false;
  const util::Duration gap = min_gap_ == util::Duration::max() ? kDefaultLastGap : min_gap_;
  trace_.period = period > util::Duration::zero() ? period : pending_offset_ + gap;
}

std::vector<std::string_view> trimmed_fields(const util::CsvTable& rows, size_t row) {
  std::vector<std::string_view> out;
  for (size_t col = 0; col < rows.field_count(row); ++col) {
    std::string_view s = rows.field(row, static_cast<int>(col));
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    out.push_back(s);
  }
  return out;
}

bool is_header_row(const util::CsvTable& rows) {
  if (rows.row_count() == 0) return false;
  const std::string_view first = trimmed_fields(rows, 0).front();
  return !first.empty() && std::isalpha(static_cast<unsigned char>(first.front()));
}

}  // namespace internal

namespace {

constexpr int64_t kMaxGapSeconds = 7 * 24 * 3600;

const char* const kFormats =
    "expected SkyPilot JSON {\"metadata\": {\"gap_seconds\": N}, \"data\": [...]}, or Bamboo CSV "
    "rows time_ms,event,node (event log), YYYY-MM-DD, HH:MM:SS, count (GCP trace) or "
    "hours,count (doc-data series)";

bool is_date(std::string_view s) {
  return s.size() == 10 && s[4] == '-' && s[7] == '-' &&
         std::all_of(s.begin(), s.begin() + 4, [](char c) { return c >= '0' && c <= '9'; });
}

// Picks the Bamboo reader from the first data row (and the header, when there is one).
util::Result<SpotTrace> parse_bamboo_csv(std::string_view text, std::string_view source) {
  TY_ASSIGN_OR_RETURN(util::CsvTable rows,
                      util::CsvTable::parse_rows(text, std::string(source), util::kLenientCsv));
  const bool header = internal::is_header_row(rows);
  if (header && internal::trimmed_fields(rows, 0).front() == "time_ms") {
    return internal::parse_bamboo_events(rows);
  }
  const size_t first = header ? 1 : 0;
  if (first >= rows.row_count()) {
    return util::invalid_argument(std::string(source) + ": no data rows (" + kFormats + ")");
  }
  const std::vector<std::string_view> f = internal::trimmed_fields(rows, first);
  if (f.size() == 3 && (f[1] == "add" || f[1] == "remove")) {
    return internal::parse_bamboo_events(rows);
  }
  if (f.size() == 3 && is_date(f[0])) return internal::parse_bamboo_gcp(rows);
  if (f.size() == 2) return internal::parse_bamboo_series(rows);
  return util::invalid_argument(std::string(source) + ":" + std::to_string(rows.line(first)) +
                                ": cannot tell the spot trace format from this row of " +
                                std::to_string(f.size()) + " fields (" + kFormats + ")");
}

}  // namespace

int SpotTrace::capacity_at(util::Duration offset) const {
  if (capacity.empty() || period <= util::Duration::zero()) return 0;
  util::Duration o = offset % period;
  if (o < util::Duration::zero()) o += period;
  auto it = std::upper_bound(capacity.begin(), capacity.end(), o,
                             [](util::Duration x, const CapacityStep& s) { return x < s.offset; });
  return it == capacity.begin() ? 0 : std::prev(it)->capacity;
}

util::Result<SpotTrace> parse_skypilot_trace(std::string_view json, std::string_view source) {
  const std::string name(source);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return util::invalid_argument(name + ": not valid JSON (" + e.what() + ")");
  }
  const std::string shape =
      " (expected SkyPilot spot-traces: {\"metadata\": {\"gap_seconds\": N}, \"data\": [...]})";
  if (!doc.is_object())
    return util::invalid_argument(name + ": top level is not an object" + shape);
  auto meta = doc.find("metadata");
  if (meta == doc.end() || !meta->is_object()) {
    return util::invalid_argument(name + ": missing object \"metadata\"" + shape);
  }
  auto gap = meta->find("gap_seconds");
  if (gap == meta->end() || !gap->is_number_integer() || gap->get<int64_t>() <= 0 ||
      gap->get<int64_t>() > kMaxGapSeconds) {
    return util::invalid_argument(name + ": metadata.gap_seconds must be an integer from 1 to " +
                                  std::to_string(kMaxGapSeconds));
  }
  auto data = doc.find("data");
  if (data == doc.end() || !data->is_array() || data->empty()) {
    return util::invalid_argument(name + ": \"data\" must be a non-empty array of counts" + shape);
  }
  const util::Duration step = util::seconds(gap->get<int64_t>());
  SpotTrace t;
  t.source = name;
  internal::CountSeries series(t);
  for (size_t i = 0; i < data->size(); ++i) {
    const nlohmann::json& v = (*data)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > internal::kMaxCount) {
      return util::invalid_argument(name + ": data[" + std::to_string(i) + "] is " + v.dump() +
                                    "; counts must be integers from 0 to " +
                                    std::to_string(internal::kMaxCount));
    }
    series.add(step * static_cast<int64_t>(i), static_cast<int>(v.get<int64_t>()));
  }
  series.finish(step * static_cast<int64_t>(data->size()));
  return t;
}

util::Result<SpotTrace> parse_bamboo_trace(std::string_view csv, std::string_view source) {
  TY_ASSIGN_OR_RETURN(util::CsvTable rows,
                      util::CsvTable::parse_rows(csv, std::string(source), util::kLenientCsv));
  return internal::parse_bamboo_events(rows);
}

util::Result<SpotTrace> parse_bamboo_gcp_trace(std::string_view csv, std::string_view source) {
  TY_ASSIGN_OR_RETURN(util::CsvTable rows,
                      util::CsvTable::parse_rows(csv, std::string(source), util::kLenientCsv));
  return internal::parse_bamboo_gcp(rows);
}

util::Result<SpotTrace> parse_bamboo_series_trace(std::string_view csv, std::string_view source) {
  TY_ASSIGN_OR_RETURN(util::CsvTable rows,
                      util::CsvTable::parse_rows(csv, std::string(source), util::kLenientCsv));
  return internal::parse_bamboo_series(rows);
}

util::Result<SpotTrace> parse_spot_trace(std::string_view text, std::string_view source) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    return parse_skypilot_trace(text, source);
  }
  return parse_bamboo_csv(text, source);
}

util::Result<SpotTrace> load_spot_trace(const std::filesystem::path& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path));
  return parse_spot_trace(text, path.string());
}

util::Result<std::map<std::string, SpotTrace>> load_skypilot_zone_traces(
    const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return util::not_found(dir.string() + ": cannot list (" + ec.message() + ")");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : it) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, SpotTrace> out;
  for (const auto& file : files) {
    const std::string stem = file.stem().string();
    const std::string zone = stem.substr(0, stem.find('_'));
    TY_ASSIGN_OR_RETURN(SpotTrace trace, load_spot_trace(file));
    if (!out.emplace(zone, std::move(trace)).second) {
      return util::invalid_argument(file.string() + ": a second trace for zone '" + zone +
                                    "'; keep one file per zone in the folder");
    }
  }
  if (out.empty()) return util::not_found(dir.string() + ": no SkyPilot *.json traces");
  return out;
}

}  // namespace trainyard::cloud
