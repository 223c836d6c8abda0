#include "server/alerts_service.h"

#include <algorithm>

#include <fmt/format.h>

#include "server/alert_view.h"
#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

std::vector<telemetry::AlertObservation> observations(const std::vector<AttributedSample>& round) {
  std::vector<telemetry::AlertObservation> out;
  out.reserve(round.size());
  for (const auto& a : round) {
    telemetry::AlertObservation o{.sample = a.sample, .process_job = a.process_job};
    for (const auto& j : a.jobs) o.jobs.push_back({.id = j.id, .name = j.name, .team = j.team});
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

model::AlertView alert_view(const telemetry::Alert& a) {
  model::AlertView v{.id = a.id,
                     .rule = a.rule,
                     .severity = a.severity,
                     .state = a.firing() ? "firing" : "resolved",
                     .subject = {.team = a.subject.team},
                     .summary = a.summary,
                     .started_at = util::format_time_ms(a.started)};
  for (const auto& j : a.subject.jobs)
    v.subject.jobs.push_back({.id = j.id, .name = j.name, .team = j.team});
  if (!a.subject.gpu_uuid.empty())
    v.subject.gpu = model::AlertGpuView{
        .uuid = a.subject.gpu_uuid, .index = a.subject.gpu_index, .model = a.subject.gpu_model};
  if (!a.firing()) v.resolution = a.resolution;
  if (a.resolved) v.resolved_at = util::format_time_ms(*a.resolved);
  return v;
}

nlohmann::json alert_json(const telemetry::Alert& a) {
  return model::to_json(alert_view(a));
}

nlohmann::json webhook_json(const telemetry::Alert& a) {
  const std::string status = a.firing() ? "firing" : "resolved";
  nlohmann::json labels = {{"alertname", a.rule}, {"severity", a.severity}};
  // Label names as dcgm-exporter's (gpu, UUID, modelName, hpc_job), so routes match both.
  if (!a.subject.gpu_uuid.empty()) {
    labels["gpu"] = std::to_string(a.subject.gpu_index);
    labels["UUID"] = a.subject.gpu_uuid;
    labels["modelName"] = a.subject.gpu_model;
  }
  if (!a.subject.jobs.empty()) {
    labels["hpc_job"] = std::to_string(a.subject.jobs.front().id);
    labels["job_name"] = a.subject.jobs.front().name;
  }
  if (!a.subject.team.empty()) labels["team"] = a.subject.team;
  nlohmann::json annotations = {{"summary", a.summary}};
  if (!a.firing()) annotations["resolution"] = a.resolution;
  const nlohmann::json one = {
      {"status", status},
      {"labels", labels},
      {"annotations", annotations},
      {"startsAt", util::format_time_ms(a.started)},
      // Alertmanager's "no end yet" is the zero time.
      {"endsAt", a.resolved ? util::format_time_ms(*a.resolved) : "0001-01-01T00:00:00Z"},
      {"fingerprint", fmt::format("{:016x}", a.id)}};
  return {{"version", "4"},
          {"status", status},
          {"receiver", "trainyard"},
          {"groupKey", fmt::format("trainyard/{}", a.id)},
          {"groupLabels", {{"alertname", a.rule}}},
          {"commonLabels", labels},
          {"commonAnnotations", annotations},
          {"alerts", nlohmann::json::array({one})},
          {"alert", alert_json(a)}};
}

AlertService::AlertService(AlertsConfig config, Sink sink)
    : config_(std::move(config)), sink_(std::move(sink)), engine_(config_.rules) {
  if (!config_.webhook.url.empty()) webhook_ = std::make_unique<WebhookSender>(config_.webhook);
}

void AlertService::on_round(util::Time now, const std::vector<AttributedSample>& round) {
  const auto obs = observations(round);
  std::vector<telemetry::AlertTransition> transitions;
  {
    util::MutexLock lock(mu_);
    transitions = engine_.evaluate(now, obs);
    for (const auto& t : transitions)
      if (!t.alert.firing()) resolved_.push_back(t.alert);
    while (static_cast<int>(resolved_.size()) > config_.keep_resolved) resolved_.pop_front();
  }
  publish(transitions);
}

void AlertService::on_team_spend(util::Time now, const std::string& team, double spent,
                                 double budget) {
  std::vector<telemetry::AlertTransition> transitions;
  {
    util::MutexLock lock(mu_);
    transitions = engine_.evaluate_budget(now, team, spent, budget);
    for (const auto& t : transitions)
      if (!t.alert.firing()) resolved_.push_back(t.alert);
    while (static_cast<int>(resolved_.size()) > config_.keep_resolved) resolved_.pop_front();
  }
  publish(transitions);
}

void AlertService::publish(const std::vector<telemetry::AlertTransition>& transitions) {
  if (transitions.empty()) return;
  for (const auto& t : transitions) {
    const auto& a = t.alert;
    if (a.firing()) {
      TY_LOG_WARN("alert {} firing: [{}] {}: {}", a.id, a.severity, a.rule, a.summary);
    } else {
      TY_LOG_INFO("alert {} resolved: {}: {}", a.id, a.rule, a.resolution);
    }
    if (webhook_) webhook_->enqueue(webhook_json(a).dump());
  }
  if (sink_) sink_(transitions);
}

std::vector<telemetry::Alert> AlertService::alerts(bool include_resolved) const {
  util::MutexLock lock(mu_);
  std::vector<telemetry::Alert> out = engine_.firing();
  std::reverse(out.begin(), out.end());
  if (include_resolved) out.insert(out.end(), resolved_.rbegin(), resolved_.rend());
  return out;
}

std::map<std::pair<std::string, std::string>, int64_t> AlertService::firing_counts() const {
  std::map<std::pair<std::string, std::string>, int64_t> out;
  for (const auto& key : telemetry::alert_rule_severities()) out[key] = 0;
  util::MutexLock lock(mu_);
  for (const auto& a : engine_.firing()) out[{a.rule, a.severity}] += 1;
  return out;
}

}  // namespace trainyard::server
