// The alert engine's bookkeeping: one state per (rule, subject), fire after `for`, resolve after
// `resolve_after`, resolve at once when the subject disappears. The rules' verdicts are in
// alerts_rules.cc.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "telemetry/alerts.h"
#include "telemetry/alerts_internal.h"

namespace trainyard::telemetry {

const std::vector<std::pair<std::string, std::string>>& alert_rule_severities() {
  static const std::vector<std::pair<std::string, std::string>> kAll = {
      {kRuleGpuTemperature, kSeverityWarning}, {kRuleGpuSlowdownTemperature, kSeverityCritical},
      {kRuleGpuThrottling, kSeverityWarning},  {kRuleGpuEccUncorrected, kSeverityCritical},
      {kRuleGpuXid, kSeverityWarning},         {kRuleGpuXid, kSeverityCritical},
      {kRuleJobMemoryLeak, kSeverityWarning},  {kRuleJobGpuIdle, kSeverityWarning},
      {kRuleTeamBudget, kSeverityWarning},     {kRuleTeamBudget, kSeverityCritical}};
  return kAll;
}

bool is_application_xid(int xid) {
  static constexpr int kApplicationXids[] = {13, 31, 43, 45, 68, 109};
  return std::find(std::begin(kApplicationXids), std::end(kApplicationXids), xid) !=
         std::end(kApplicationXids);
}

std::string format_alert_duration(util::Duration d) {
  int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms < 0) ms = 0;
  if (ms < 60'000) {
    if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
    return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000);
  }
  const int64_t s = ms / 1000;
  if (s < 3600)
    return s % 60 == 0 ? fmt::format("{}m", s / 60) : fmt::format("{}m{}s", s / 60, s % 60);
  return s % 3600 / 60 == 0 ? fmt::format("{}h", s / 3600)
                            : fmt::format("{}h{}m", s / 3600, s % 3600 / 60);
}

void AlertEngine::step(util::Time now, const Key& key, const AlertRules::Timing& timing,
                       const std::string& severity, const AlertSubject& subject, const Verdict& v,
                       std::vector<AlertTransition>& out) {
  State& st = states_[key];
  st.seen = now;
  switch (v.level) {
    case Level::Unknown:
      return;
    case Level::Band:
      // Between the clear and the fire threshold: neither fires nor clears.
      if (st.alert)
        st.good_since.reset();
      else
        st.bad_since.reset();
      return;
    case Level::Good:
      st.bad_since.reset();
      if (!st.alert) return;
      if (!st.good_since) st.good_since = now;
      if (now - *st.good_since >= timing.resolve_after) {
        Alert a = std::move(*st.alert);
        st.alert.reset();
        st.good_since.reset();
        a.resolved = now;
        a.resolution =
            timing.resolve_after > util::Duration(0)
                ? fmt::format("{} for {}", v.text, format_alert_duration(timing.resolve_after))
                : v.text;
        out.push_back({std::move(a)});
      }
      return;
    case Level::Bad: {
      st.good_since.reset();
      if (st.alert) return;  // firing already: one alert per episode
      if (!st.bad_since) st.bad_since = now;
      if (now - *st.bad_since < timing.fire_after) return;
      Alert a{.id = next_id_++,
              .rule = std::get<0>(key),
              .severity = severity,
              .subject = subject,
              .summary =
                  timing.fire_after > util::Duration(0)
                      ? fmt::format("{} for {}", v.text, format_alert_duration(timing.fire_after))
                      : v.text,
              .started = now};
      st.alert = a;
      out.push_back({std::move(a)});
      return;
    }
  }
}

void AlertEngine::resolve_unseen(util::Time now, std::vector<AlertTransition>& out) {
  for (auto it = states_.begin(); it != states_.end();) {
    const bool team = std::get<0>(it->first) == kRuleTeamBudget;  // fed separately
    if (team || it->second.seen == now) {
      ++it;
      continue;
    }
    if (it->second.alert) {
      Alert a = std::move(*it->second.alert);
      a.resolved = now;
      a.resolution = a.subject.jobs.empty() || std::get<2>(it->first) == 0
                         ? "the device is no longer reported"
                         : "the job no longer holds the GPU";
      out.push_back({std::move(a)});
    }
    memory_series_.erase(it->first);
    it = states_.erase(it);
  }
}

std::vector<AlertTransition> AlertEngine::evaluate(util::Time now,
                                                   const std::vector<AlertObservation>& round) {
  std::vector<AlertTransition> out;
  for (const auto& o : round) {
    evaluate_device(now, o, out);
    evaluate_jobs(now, o, out);
    DeviceMemory& mem = devices_[o.sample.uuid];
    if (o.sample.ecc_uncorrected_volatile) mem.ecc = o.sample.ecc_uncorrected_volatile;
    if (o.sample.xid_count) mem.xid_count = *o.sample.xid_count;
  }
  resolve_unseen(now, out);
  return out;
}

std::vector<AlertTransition> AlertEngine::evaluate_budget(util::Time now, const std::string& team,
                                                          double spent, double budget) {
  std::vector<AlertTransition> out;
  const auto& r = rules_.budget;
  if (!r.enabled || !std::isfinite(spent) || !std::isfinite(budget) || spent < 0 || budget <= 0)
    return out;
  const AlertSubject subject{.team = team};
  const double share = spent / budget;
  const std::pair<double, const char*> levels[] = {{r.warn_share, kSeverityWarning},
                                                   {1.0, kSeverityCritical}};
  for (const auto& [level, severity] : levels) {
    const Key key{kRuleTeamBudget, team, 0, severity};
    const std::string numbers =
        fmt::format("team {} has spent {:.2f} of its budget {:.2f} ({:.0f}%)", team, spent, budget,
                    share * 100);
    const Verdict v =
        share >= level
            ? Verdict{Level::Bad, fmt::format("{}, at or above {:.0f}%", numbers, level * 100)}
            : Verdict{Level::Good, fmt::format("{}, below {:.0f}%", numbers, level * 100)};
    step(now, key, r, severity, subject, v, out);
  }
  return out;
}

std::vector<Alert> AlertEngine::firing() const {
  std::vector<Alert> out;
  for (const auto& [key, st] : states_)
    if (st.alert) out.push_back(*st.alert);
  std::sort(out.begin(), out.end(), [](const Alert& a, const Alert& b) { return a.id < b.id; });
  return out;
}

}  // namespace trainyard::telemetry
