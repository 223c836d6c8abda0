// Shared pieces of the spot trace readers (spot_trace.cc, spot_trace_csv.cc): the builder that
// turns a count series into steps and reclaims, and the Bamboo CSV readers over rows already
// split by util::CsvTable (no header; blank rows dropped). Not part of cloud/'s interface.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cloud/spot_trace.h"
#include "util/csv_table.h"
#include "util/status.h"

namespace trainyard::cloud::internal {

// Bounds that keep offsets far inside int64 microseconds and refuse nonsense early.
constexpr int64_t kMaxCount = 1'000'000;
constexpr int64_t kMaxTimeMs = int64_t{100} * 365 * 24 * 3600 * 1000;  // a century
// Length of the last sample when a file has only one distinct time (Bamboo's one-minute grid).
constexpr util::Duration kDefaultLastGap = std::chrono::seconds(60);

// Appends a step unless the capacity did not change; a step at the last step's offset
// replaces it.
void push_step(SpotTrace& t, util::Duration offset, int capacity);

// Builds a SpotTrace from samples "from `offset` on, `count` nodes are obtainable", offsets
// non-decreasing. Samples at one offset collapse to the last of them; a fall of the count is a
// reclaim of the difference (`to_zero` when it falls to 0). Capacity is 0 before the first
// sample. Usage: add()… then finish().
class CountSeries {
 public:
  explicit CountSeries(SpotTrace& trace) : trace_(trace) {}
  void add(util::Duration offset, int count);
  // Commits the last sample; the pass lasts `period`, or when that is zero the last offset plus
  // the smallest gap between distinct offsets (kDefaultLastGap with one offset).
  void finish(util::Duration period);
  bool empty() const { return !has_pending_; }

 private:
  void commit();

  SpotTrace& trace_;
  bool has_pending_ = false;
  util::Duration pending_offset_{0};
  int pending_count_ = 0;
  int previous_ = 0;
  util::Duration min_gap_ = util::Duration::max();
};

// A row's fields with blanks (spaces, tabs) trimmed from both ends.
std::vector<std::string_view> trimmed_fields(const util::CsvTable& rows, size_t row);
// Row 0 is a header when its first field starts with a letter ("time_ms", "hours", "date").
bool is_header_row(const util::CsvTable& rows);

util::Result<SpotTrace> parse_bamboo_events(const util::CsvTable& rows);
util::Result<SpotTrace> parse_bamboo_gcp(const util::CsvTable& rows);
util::Result<SpotTrace> parse_bamboo_series(const util::CsvTable& rows);

}  // namespace trainyard::cloud::internal
