// The alert rules' verdicts: from one device's reading (and, for the memory-leak rule, the job's
// recent memory) to Good, Band, Bad or Unknown with the numbers behind it. Thresholds and their
// sources are in alerts.h (AlertRules).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "telemetry/alerts.h"
#include "telemetry/alerts_internal.h"

namespace trainyard::telemetry {
namespace {

using Level = AlertEngine::Level;
using Verdict = AlertEngine::Verdict;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// The leak rule keeps at most this many points per window, so a short sampling interval does
// not grow its memory without bound.
constexpr int64_t kLeakPointsPerWindow = 256;
// A window counts once the points span this share of it (sampling jitter).
constexpr double kLeakMinSpanShare = 0.9;

std::string gib(double bytes) {
  return fmt::format("{:.1f} GiB", bytes / kGiB);
}

std::string device_name(const GpuSample& s) {
  return s.model.empty() ? fmt::format("GPU {}", s.index)
                         : fmt::format("GPU {} ({})", s.index, s.model);
}

std::string job_name(const AlertJob& j) {
  return j.name.empty() ? fmt::format("job {}", j.id) : fmt::format("job {} ({})", j.id, j.name);
}

std::string throttle_names(uint64_t bits) {
  static constexpr std::pair<uint64_t, const char*> kNames[] = {
      {kThrottleHwSlowdown, "hw-slowdown"},
      {kThrottleSwThermal, "sw-thermal"},
      {kThrottleHwThermal, "hw-thermal"},
      {kThrottleHwPowerBrake, "hw-power-brake"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((bits & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

// Above `fire` is Bad, at or below `fire - hysteresis` Good, in between Band.
Verdict temperature_verdict(const GpuSample& s, double fire, double hysteresis, const char* what) {
  if (!s.temperature_c) return {};
  const double t = *s.temperature_c;
  if (t >= fire)
    return {Level::Bad,
            fmt::format("{} at {:.1f} C, at or above {} {:.0f} C", device_name(s), t, what, fire)};
  if (t <= fire - hysteresis)
    return {Level::Good, fmt::format("{:.1f} C, at or below {:.0f} C", t, fire - hysteresis)};
  return {Level::Band, ""};
}

// Least-squares slope of bytes over time, in bytes per millisecond; points are (milliseconds
// from the first point, bytes).
double slope_per_ms(const std::vector<std::pair<double, double>>& points) {
  double mean_t = 0, mean_b = 0;
  for (const auto& [t, b] : points) {
    mean_t += t - points.front().first;
    mean_b += b;
  }
  const auto n = static_cast<double>(points.size());
  mean_t /= n;
  mean_b /= n;
  double num = 0, den = 0;
  for (const auto& [t, b] : points) {
    const double dt = t - points.front().first - mean_t;
    num += dt * (b - mean_b);
    den += dt * dt;
  }
  return den > 0 ? num / den : 0;
}

// A duration in milliseconds, with fractions.
double to_ms(util::Duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

void AlertEngine::evaluate_device(util::Time now, const AlertObservation& o,
                                  std::vector<AlertTransition>& out) {
  const GpuSample& s = o.sample;
  const AlertSubject subject{
      .gpu_uuid = s.uuid, .gpu_index = s.index, .gpu_model = s.model, .jobs = o.jobs};
  if (const auto& r = rules_.temperature; r.enabled) {
    step(now, {kRuleGpuTemperature, s.uuid, 0, ""}, r, kSeverityWarning, subject,
         temperature_verdict(s, r.threshold_c, r.hysteresis_c, "the alert threshold"), out);
    const Verdict slowdown = r.slowdown && s.slowdown_temperature_c
                                 ? temperature_verdict(s, *s.slowdown_temperature_c, r.hysteresis_c,
                                                       "its slowdown threshold")
                                 : Verdict{};
    step(now, {kRuleGpuSlowdownTemperature, s.uuid, 0, ""}, r, kSeverityCritical, subject, slowdown,
         out);
  }
  if (const auto& r = rules_.throttling; r.enabled) {
    Verdict v;
    if (s.throttle_reasons) {
      const uint64_t bits = *s.throttle_reasons & kThrottleThermalOrPower;
      v = bits != 0 ? Verdict{Level::Bad,
                              fmt::format("{} clocks slowed by {} (reasons 0x{:x})", device_name(s),
                                          throttle_names(bits), *s.throttle_reasons)}
                    : Verdict{Level::Good, "no thermal or power slowdown"};
    }
    step(now, {kRuleGpuThrottling, s.uuid, 0, ""}, r, kSeverityWarning, subject, v, out);
  }
  const DeviceMemory before = devices_.count(s.uuid) ? devices_[s.uuid] : DeviceMemory{};
  if (const auto& r = rules_.ecc; r.enabled) {
    Verdict v;
    // The first reading is the baseline: volatile counts since the driver loaded are history.
    if (s.ecc_uncorrected_volatile && before.ecc) {
      const uint64_t now_count = *s.ecc_uncorrected_volatile;
      v = now_count > *before.ecc
              ? Verdict{Level::Bad, fmt::format("{}: {} new uncorrected ECC error(s), volatile "
                                                "total {}",
                                                device_name(s), now_count - *before.ecc, now_count)}
              : Verdict{Level::Good, "no new uncorrected ECC error"};
    }
    step(now, {kRuleGpuEccUncorrected, s.uuid, 0, ""}, r, kSeverityCritical, subject, v, out);
  }
  if (const auto& r = rules_.xid; r.enabled) {
    // xid_count counts from the sampler's start, so every one it reports is new to us.
    Verdict app, device;
    if (s.xid_count) {
      const bool fresh = *s.xid_count > before.xid_count;
      const Verdict quiet{Level::Good, "no new XID error"};
      app = device = quiet;
      if (fresh && s.last_xid) {
        const bool is_app = is_application_xid(*s.last_xid);
        Verdict bad{Level::Bad, fmt::format("{}: XID {} ({}), {} new", device_name(s), *s.last_xid,
                                            is_app ? "an application error: see the job's logs"
                                                   : "a device error: drain the GPU and check it",
                                            *s.xid_count - before.xid_count)};
        (is_app ? app : device) = std::move(bad);
      }
    }
    step(now, {kRuleGpuXid, s.uuid, 0, kSeverityWarning}, r, kSeverityWarning, subject, app, out);
    step(now, {kRuleGpuXid, s.uuid, 0, kSeverityCritical}, r, kSeverityCritical, subject, device,
         out);
  }
}

void AlertEngine::evaluate_jobs(util::Time now, const AlertObservation& o,
                                std::vector<AlertTransition>& out) {
  const GpuSample& s = o.sample;
  for (const AlertJob& job : o.jobs) {
    const AlertSubject subject{.gpu_uuid = s.uuid,
                               .gpu_index = s.index,
                               .gpu_model = s.model,
                               .jobs = {job},
                               .team = job.team};
    if (const auto& r = rules_.idle; r.enabled) {
      // GPU_UTIL is not reported on MIG; SM activity stands in where it is known.
      const std::optional<double> util =
          s.gpu_util_percent ? s.gpu_util_percent : s.sm_active_percent;
      Verdict v;
      if (util) {
        const std::string memory =
            s.memory_used_bytes
                ? fmt::format(" with {} in use", gib(static_cast<double>(*s.memory_used_bytes)))
                : "";
        v = *util < r.util_percent
                ? Verdict{Level::Bad,
                          fmt::format("{} holds {}{} at {:.1f}% utilization, below "
                                      "{:.0f}%",
                                      job_name(job), device_name(s), memory, *util, r.util_percent)}
                : Verdict{Level::Good, fmt::format("utilization {:.1f}%, at or above {:.0f}%",
                                                   *util, r.util_percent)};
      }
      step(now, {kRuleJobGpuIdle, s.uuid, job.id, ""}, r, kSeverityWarning, subject, v, out);
    }
    if (const auto& r = rules_.memory_leak; r.enabled) {
      // The job's own processes when they are known; the whole device when it is alone on it.
      std::optional<double> bytes;
      for (const auto& p : s.processes) {
        auto it = o.process_job.find(p.pid);
        if (it == o.process_job.end() || it->second != job.id || !p.memory_bytes) continue;
        bytes = bytes.value_or(0) + static_cast<double>(*p.memory_bytes);
      }
      if (!bytes && o.jobs.size() == 1 && s.memory_used_bytes)
        bytes = static_cast<double>(*s.memory_used_bytes);
      const Key key{kRuleJobMemoryLeak, s.uuid, job.id, ""};
      Verdict v = leak_verdict(key, now, bytes, s.memory_total_bytes);
      if (v.level == Level::Bad)
        v.text = fmt::format("{} on {}: {}", job_name(job), device_name(s), v.text);
      step(now, key, r, kSeverityWarning, subject, v, out);
    }
  }
}

AlertEngine::Verdict AlertEngine::leak_verdict(const Key& key, util::Time now,
                                               std::optional<double> bytes,
                                               std::optional<uint64_t> total) {
  const auto& r = rules_.memory_leak;
  auto& series = memory_series_[key];
  const util::Duration window = std::max<util::Duration>(std::chrono::milliseconds(1), r.window);
  if (bytes && std::isfinite(*bytes) &&
      (series.empty() || now - series.back().t >= window / kLeakPointsPerWindow))
    series.push_back({now, *bytes});
  series.erase(std::remove_if(series.begin(), series.end(),
                              [&](const Point& p) { return p.t < now - window; }),
               series.end());
  if (!bytes || !total || *total == 0 || series.size() < 3) return {};
  const util::Duration span = series.back().t - series.front().t;
  if (to_ms(span) < kLeakMinSpanShare * to_ms(window)) return {};
  std::vector<std::pair<double, double>> points;
  points.reserve(series.size());
  for (const auto& p : series) points.emplace_back(to_ms(p.t - series.front().t), p.bytes);
  const double slope = slope_per_ms(points);
  const double rise = slope * to_ms(span);
  const double share = rise / static_cast<double>(*total);
  const std::string numbers =
      fmt::format("memory {} {} ({:.1f}% of {}) over {} by least squares ({}/min), now {}",
                  rise >= 0 ? "rose" : "fell", gib(std::abs(rise)), std::abs(share) * 100,
                  gib(static_cast<double>(*total)), format_alert_duration(span),
                  gib(slope * 60'000), gib(*bytes));
  if (slope > 0 && share > r.min_rise_share) return {Level::Bad, numbers};
  if (share <= r.min_rise_share / 2) return {Level::Good, numbers};
  return {Level::Band, numbers};
}

}  // namespace trainyard::telemetry
