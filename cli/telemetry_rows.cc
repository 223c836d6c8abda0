#include "cli/telemetry_rows.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace trainyard::cli {
namespace {

using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;

std::optional<double> mib(const std::optional<double>& v) {
  return v ? std::optional<double>(*v / kMiB) : std::nullopt;
}
std::optional<double> mib(const std::optional<int64_t>& v) {
  return v ? std::optional<double>(static_cast<double>(*v) / kMiB) : std::nullopt;
}

// Device UUID -> (node, GPU index), from the current placement and every attempt's.
std::map<std::string, std::pair<std::string, int>> devices_of(const model::JobDetailView& job) {
  std::map<std::string, std::pair<std::string, int>> out;
  auto add = [&](const std::vector<model::PlacementView>& placement) {
    for (const auto& a : placement)
      if (a.device) out[*a.device] = {a.node, a.gpu};
  };
  for (const auto& at : job.attempts) add(at.placement);
  add(job.job.placement);
  return out;
}

std::string fixed(const std::optional<double>& v, int digits) {
  return v ? fmt::format("{:.{}f}", *v, digits) : "";
}

json opt(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::vector<TelemetryRow> telemetry_rows(const model::JobTelemetryView& telemetry,
                                         const model::JobDetailView& job) {
  const auto devices = devices_of(job);
  std::vector<TelemetryRow> rows;
  for (const auto& m : telemetry.minutes) {
    TelemetryRow r;
    r.time = m.minute;
    r.device = m.device;
    if (auto it = devices.find(r.device); it != devices.end()) {
      r.node = it->second.first;
      if (it->second.second >= 0) r.gpu = it->second.second;
    }
    r.samples = m.samples;
    r.partial = m.partial;
    r.util_percent = m.gpu_util_avg;
    r.util_max_percent = m.gpu_util_max;
    r.sm_active_percent = m.sm_active_avg;
    r.memory_used_mib = mib(m.memory_used_avg_bytes);
    r.memory_used_max_mib = mib(m.memory_used_max_bytes);
    r.memory_total_mib = mib(m.memory_total_bytes);
    r.power_w = m.power_avg_w;
    r.power_max_w = m.power_max_w;
    r.temperature_c = m.temperature_avg_c;
    r.temperature_max_c = m.temperature_max_c;
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TelemetryRow& a, const TelemetryRow& b) {
    return std::tie(a.time, a.node, a.gpu, a.device) < std::tie(b.time, b.node, b.gpu, b.device);
  });
  return rows;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string rows_csv(const std::vector<TelemetryRow>& rows) {
  std::string out =
      "time,node,gpu,device,samples,partial,util_percent,util_max_percent,sm_active_percent,"
      "memory_used_mib,memory_used_max_mib,memory_total_mib,power_w,power_max_w,temperature_c,"
      "temperature_max_c\r\n";
  for (const auto& r : rows) {
    const std::vector<std::string> fields = {r.time,
                                             r.node,
                                             r.gpu ? std::to_string(*r.gpu) : "",
                                             r.device,
                                             std::to_string(r.samples),
                                             r.partial ? "true" : "false",
                                             fixed(r.util_percent, 1),
                                             fixed(r.util_max_percent, 1),
                                             fixed(r.sm_active_percent, 1),
                                             fixed(r.memory_used_mib, 0),
                                             fixed(r.memory_used_max_mib, 0),
                                             fixed(r.memory_total_mib, 0),
                                             fixed(r.power_w, 1),
                                             fixed(r.power_max_w, 1),
                                             fixed(r.temperature_c, 1),
                                             fixed(r.temperature_max_c, 1)};
    for (size_t i = 0; i < fields.size(); ++i) out += (i > 0 ? "," : "") + csv_field(fields[i]);
    out += "\r\n";
  }
  return out;
}

json rows_json(const std::vector<TelemetryRow>& rows) {
  json items = json::array();
  for (const auto& r : rows) {
    items.push_back({{"time", r.time},
                     {"node", r.node.empty() ? json(nullptr) : json(r.node)},
                     {"gpu", r.gpu ? json(*r.gpu) : json(nullptr)},
                     {"device", r.device},
                     {"samples", r.samples},
                     {"partial", r.partial},
                     {"utilPercent", opt(r.util_percent)},
                     {"utilMaxPercent", opt(r.util_max_percent)},
                     {"smActivePercent", opt(r.sm_active_percent)},
                     {"memoryUsedMiB", opt(r.memory_used_mib)},
                     {"memoryUsedMaxMiB", opt(r.memory_used_max_mib)},
                     {"memoryTotalMiB", opt(r.memory_total_mib)},
                     {"powerW", opt(r.power_w)},
                     {"powerMaxW", opt(r.power_max_w)},
                     {"temperatureC", opt(r.temperature_c)},
                     {"temperatureMaxC", opt(r.temperature_max_c)}});
  }
  return items;
}

std::vector<std::string> rows_table_header() {
  return {"TIME", "NODE", "GPU", "UTIL%", "MEM MIB", "SM%", "POWER W", "TEMP C", "SAMPLES"};
}

std::vector<std::vector<std::string>> rows_table(const std::vector<TelemetryRow>& rows) {
  std::vector<std::vector<std::string>> out;
  auto dash = [](std::string s) { return s.empty() ? std::string("-") : s; };
  for (const auto& r : rows) {
    out.push_back({r.time + (r.partial ? "*" : ""), dash(r.node),
                   r.gpu ? std::to_string(*r.gpu) : "-", dash(fixed(r.util_percent, 0)),
                   dash(fixed(r.memory_used_mib, 0)), dash(fixed(r.sm_active_percent, 0)),
                   dash(fixed(r.power_w, 0)), dash(fixed(r.temperature_c, 0)),
                   std::to_string(r.samples)});
  }
  return out;
}

}  // namespace trainyard::cli
