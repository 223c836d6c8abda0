#include "server/telemetry_open_minutes.h"

#include <algorithm>
#include <map>

namespace trainyard::server {
namespace {

std::optional<double> as_double(std::optional<uint64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

}  // namespace

void MinuteSummary::Average::add(std::optional<double> v) {
  if (!v) return;
  sum += *v;
  n += 1;
  max = max ? std::max(*max, *v) : *v;
}

std::optional<double> MinuteSummary::Average::mean() const {
  return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
}

void MinuteSummary::add(const telemetry::GpuSample& s) {
  samples_ += 1;
  util_.add(s.gpu_util_percent);
  mem_util_.add(s.mem_util_percent);
  sm_active_.add(s.sm_active_percent);
  tensor_active_.add(s.tensor_active_percent);
  mem_used_.add(as_double(s.memory_used_bytes));
  temp_.add(s.temperature_c);
  power_.add(s.power_w);
  sm_clock_.add(s.sm_clock_mhz);
  if (s.memory_total_bytes) mem_total_ = static_cast<int64_t>(*s.memory_total_bytes);
  if (s.throttle_reasons)
    throttle_or_ = throttle_or_.value_or(0) | static_cast<int64_t>(*s.throttle_reasons);
  if (s.ecc_uncorrected_volatile)
    ecc_uncorrected_max_ = std::max(ecc_uncorrected_max_.value_or(0),
                                    static_cast<int64_t>(*s.ecc_uncorrected_volatile));
  if (s.last_xid) xid_last_ = *s.last_xid;
}

store::TelemetryMinute MinuteSummary::row(const std::string& device_uuid, util::Time minute) const {
  store::TelemetryMinute m;
  m.device_uuid = device_uuid;
  m.minute = minute;
  m.samples = samples_;
  m.gpu_util_avg = util_.mean();
  m.gpu_util_max = util_.max;
  m.mem_util_avg = mem_util_.mean();
  m.sm_active_avg = sm_active_.mean();
  m.tensor_active_avg = tensor_active_.mean();
  m.mem_used_avg = mem_used_.mean();
  if (mem_used_.max) m.mem_used_max = static_cast<int64_t>(*mem_used_.max);
  m.mem_total = mem_total_;
  m.temp_avg = temp_.mean();
  m.temp_max = temp_.max;
  m.power_avg = power_.mean();
  m.power_max = power_.max;
  m.sm_clock_avg = sm_clock_.mean();
  m.throttle_or = throttle_or_;
  m.ecc_uncorrected_max = ecc_uncorrected_max_;
  m.xid_last = xid_last_;
  return m;
}

std::vector<store::TelemetryMinute> summarize_minutes(
    const std::vector<telemetry::GpuSample>& samples) {
  std::map<std::pair<util::Time, std::string>, MinuteSummary> open;
  for (const auto& s : samples) open[{util::minute_of(s.time), s.uuid}].add(s);
  std::vector<store::TelemetryMinute> rows;
  for (const auto& [key, summary] : open) rows.push_back(summary.row(key.second, key.first));
  return rows;
}

}  // namespace trainyard::server
