// The control plane's side of alerts: the GET /api/v1/alerts view and the job events that alert
// transitions become.
#include <fmt/format.h>

#include "server/alert_view.h"
#include "server/control_plane.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

bool is_job_alert(const telemetry::Alert& a) {
  return a.rule == telemetry::kRuleJobMemoryLeak || a.rule == telemetry::kRuleJobGpuIdle;
}

std::string event_reason(const telemetry::Alert& a) {
  if (a.firing()) return fmt::format("[{}] {}: {} (alert {})", a.severity, a.rule, a.summary, a.id);
  return fmt::format("{} resolved: {} (alert {}, fired {})", a.rule, a.resolution, a.id,
                     util::format_time(a.started));
}

}  // namespace

nlohmann::json ControlPlane::alerts(bool include_resolved, const Principal& who) const {
  model::AlertListView out;
  if (alerts_) {
    for (const auto& a : alerts_->alerts(include_resolved)) {
      // A team sees its own jobs' and budget alerts; device alerts are everyone's, with the
      // names of other teams' jobs left out (as in GET /api/v1/gpus).
      const bool own_team = a.subject.team.empty() || who.may_access_team(a.subject.team);
      if ((is_job_alert(a) || a.rule == telemetry::kRuleTeamBudget) && !own_team) continue;
      model::AlertView& v = out.items.emplace_back(alert_view(a));
      for (auto& job : v.subject.jobs)
        if (!who.may_access_team(job.team)) job.name.reset();
    }
  }
  return model::to_json(out);
}

void ControlPlane::append_alert_events(const std::vector<telemetry::AlertTransition>& transitions) {
  std::vector<store::EventRecord> events;
  for (const auto& t : transitions) {
    const telemetry::Alert& a = t.alert;
    for (const auto& job : a.subject.jobs) {
      // The job's attempt and state at the time of the event; a job that vanished is skipped.
      auto rec = load_record(util::JobId(job.id));
      if (!rec.is_ok()) continue;
      events.push_back({.job = rec->id,
                        .at = a.firing() ? a.started : *a.resolved,
                        .type = a.firing() ? "Alert" : "AlertResolved",
                        .to_state = std::string(model::job_state_name(rec->state)),
                        .attempt = rec->attempt,
                        .reason = event_reason(a)});
    }
  }
  if (events.empty()) return;
  // One transaction per round through the group committer. Alerts are advice: a failed write is
  // logged, not a reason to stop the server.
  const util::Status st = committer_->commit([&](store::Store& s) -> util::Status {
    for (const auto& e : events) {
      auto seq = s.append_event(e);
      if (!seq.is_ok()) return seq.status();
    }
    return util::Status::ok();
  });
  if (!st.is_ok()) TY_LOG_WARN("alerts: cannot record alert events: {}", st.message());
}

}  // namespace trainyard::server
