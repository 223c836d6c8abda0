// A job's per-minute GPU telemetry (GET /api/v1/jobs/{id}/telemetry, docs/api.md) as rows: one
// per GPU and minute, named by node and GPU index from the job's placements, for
// `trainyard telemetry` (CSV, JSON, table) and the sparklines of `trainyard show`. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/api_telemetry_views.h"
#include "model/api_views.h"

namespace trainyard::cli {

struct TelemetryRow {
  std::string time;  // the minute's start, RFC 3339 UTC
  std::string node;  // "" when no placement of the job names the device
  std::optional<int> gpu;
  std::string device;  // UUID
  int64_t samples = 0;
  bool partial = false;  // the minute in progress (or not stored yet)
  std::optional<double> util_percent, util_max_percent, sm_active_percent;
  std::optional<double> memory_used_mib, memory_used_max_mib, memory_total_mib;
  std::optional<double> power_w, power_max_w, temperature_c, temperature_max_c;
};

// `telemetry`: the endpoint's reply; `job`: GET /api/v1/jobs/{id} (placement and attempts).
// Ordered by time, node, GPU index, device.
std::vector<TelemetryRow> telemetry_rows(const model::JobTelemetryView& telemetry,
                                         const model::JobDetailView& job);

// RFC 4180: a header line, CRLF line ends, fields with a comma, quote or line break quoted.
std::string rows_csv(const std::vector<TelemetryRow>& rows);
std::string csv_field(std::string_view text);
nlohmann::json rows_json(const std::vector<TelemetryRow>& rows);
// Cells for an aligned table (render_table), with the header.
std::vector<std::string> rows_table_header();
std::vector<std::vector<std::string>> rows_table(const std::vector<TelemetryRow>& rows);

}  // namespace trainyard::cli
