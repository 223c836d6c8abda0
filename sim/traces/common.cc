#include "sim/traces/common.h"

#include <algorithm>

#include <fmt/format.h>

namespace trainyard::sim {

util::Result<double> get_time_seconds(const util::CsvReader& csv, int col) {
  TY_ASSIGN_OR_RETURN(const double s, csv.get_double(col));
  if (s < 0 || s > kMaxTraceTimeSeconds) {
    return csv.error_at(col, fmt::format("expected seconds in 0..{:g}, got {}",
                                         kMaxTraceTimeSeconds, csv.field(col)));
  }
  return s;
}

util::Result<double> get_duration_seconds(const util::CsvReader& csv, int col) {
  TY_ASSIGN_OR_RETURN(const double s, csv.get_double(col));
  if (s <= 0 || s > kMaxTraceDurationSeconds) {
    return csv.error_at(col, fmt::format("expected a duration in seconds, > 0 and at most {:g}, "
                                         "got {}",
                                         kMaxTraceDurationSeconds, csv.field(col)));
  }
  return s;
}

util::Result<int64_t> get_int_in(const util::CsvReader& csv, int col, int64_t lo, int64_t hi,
                                 std::string_view unit) {
  TY_ASSIGN_OR_RETURN(const int64_t v, csv.get_int(col));
  if (v < lo || v > hi) {
    return csv.error_at(col, fmt::format("expected {}..{} {}, got {}", lo, hi, unit, v));
  }
  return v;
}

util::Result<std::vector<std::string>> split_list(const util::CsvReader& csv, int col) {
  std::vector<std::string> out;
  const std::string_view text = csv.field(col);
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t bar = text.find('|', start);
    const std::string_view item =
        text.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    if (item.empty()) {
      return csv.error_at(col, fmt::format("empty item in the '|'-separated list '{}'; write "
                                           "items like A|B",
                                           text));
    }
    out.emplace_back(item);
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return out;
}

int worker_gpu_limit(int trace_server_gpus, const TraceOptions& opts) {
  return opts.gpus_per_node > 0 ? std::min(trace_server_gpus, opts.gpus_per_node)
                                : trace_server_gpus;
}

void split_into_workers(int64_t gpus, int per_node_max, model::JobSpec& spec) {
  if (gpus <= 0) {
    spec.workers = 1;
    spec.worker.gpus = 0;
    return;
  }
  int per_worker = static_cast<int>(std::min<int64_t>(gpus, per_node_max));
  while (gpus % per_worker != 0) --per_worker;
  spec.workers = static_cast<int>(gpus / per_worker);
  spec.worker.gpus = per_worker;
}

}  // namespace trainyard::sim
