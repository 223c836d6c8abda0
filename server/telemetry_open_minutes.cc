#include "server/telemetry_open_minutes.h"

#include <algorithm>
#include <map>

namespace trainyard::server {
namespace {

constexpr int64_t kMinuteMs = 60'000;

struct Stat {
  double sum = 0;
  int64_t n = 0;
  std::optional<double> max;
  void add(std::optional<double> v) {
    if (!v) return;
    sum += *v;
    n += 1;
    max = max ? std::max(*max, *v) : *v;
  }
  std::optional<double> mean() const {
    return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
  }
};

struct Acc {
  int64_t samples = 0;
  Stat util, mem_util, sm_active, tensor_active, mem_used, temp, power, sm_clock;
  std::optional<int64_t> mem_total;
};

std::optional<double> as_double(std::optional<uint64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

}  // namespace

std::vector<store::TelemetryMinute> summarize_minutes(
    const std::vector<telemetry::GpuSample>& samples) {
  std::map<std::pair<int64_t, std::string>, Acc> open;
  for (const auto& s : samples) {
    const int64_t minute = s.time_ms - ((s.time_ms % kMinuteMs) + kMinuteMs) % kMinuteMs;
    Acc& a = open[{minute, s.uuid}];
    a.samples += 1;
    a.util.add(s.gpu_util_percent);
    a.mem_util.add(s.mem_util_percent);
    a.sm_active.add(s.sm_active_percent);
    a.tensor_active.add(s.tensor_active_percent);
    a.mem_used.add(as_double(s.memory_used_bytes));
    a.temp.add(s.temperature_c);
    a.power.add(s.power_w);
    a.sm_clock.add(s.sm_clock_mhz);
    if (s.memory_total_bytes) a.mem_total = static_cast<int64_t>(*s.memory_total_bytes);
  }
  std::vector<store::TelemetryMinute> rows;
  for (const auto& [key, a] : open) {
    store::TelemetryMinute m;
    m.device_uuid = key.second;
    m.minute = util::Time(std::chrono::milliseconds(key.first));
    m.samples = a.samples;
    m.gpu_util_avg = a.util.mean();
    m.gpu_util_max = a.util.max;
    m.mem_util_avg = a.mem_util.mean();
    m.sm_active_avg = a.sm_active.mean();
    m.tensor_active_avg = a.tensor_active.mean();
    m.mem_used_avg = a.mem_used.mean();
    if (a.mem_used.max) m.mem_used_max = static_cast<int64_t>(*a.mem_used.max);
    m.mem_total = a.mem_total;
    m.temp_avg = a.temp.mean();
    m.temp_max = a.temp.max;
    m.power_avg = a.power.mean();
    m.power_max = a.power.max;
    m.sm_clock_avg = a.sm_clock.mean();
    rows.push_back(std::move(m));
  }
  return rows;
}

}  // namespace trainyard::server
