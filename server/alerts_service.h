// The server's alerts: runs the alert engine (telemetry/alerts.h) on every telemetry round,
// keeps the firing alerts and a bounded list of resolved ones for GET /api/v1/alerts and the
// trainyard_alerts_firing metric, hands each transition to a sink (the control plane appends it
// to the events of the jobs it is about) and to the webhook, if one is configured.
//
// Thread-safe. mu_ guards the engine and the resolved list; the sink and the webhook are called
// without mu_ held. on_round() is called from the telemetry recorder's thread.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/alerts_config.h"
#include "server/alerts_webhook.h"
#include "server/telemetry_recorder.h"
#include "telemetry/alerts.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

class AlertService {
 public:
  using Sink = std::function<void(const std::vector<telemetry::AlertTransition>&)>;
  AlertService(AlertsConfig config, Sink sink);

  // One telemetry round: every device's newest attributed sample.
  void on_round(util::Time now, const std::vector<AttributedSample>& round) TY_EXCLUDES(mu_);
  // A team's spending against its budget (cost keeping calls it every reconcile cycle).
  void on_team_spend(util::Time now, const std::string& team, double spent, double budget)
      TY_EXCLUDES(mu_);

  // Firing alerts, newest first, then (with `include_resolved`) the resolved ones kept, newest
  // first.
  std::vector<telemetry::Alert> alerts(bool include_resolved) const;
  // (rule, severity) -> firing alerts, every pair the engine knows included (zeros too).
  std::map<std::pair<std::string, std::string>, int64_t> firing_counts() const;

 private:
  // Calls the sink and the webhook, which may call back into the server: never under mu_.
  void publish(const std::vector<telemetry::AlertTransition>& transitions) TY_EXCLUDES(mu_);

  const AlertsConfig config_;
  const Sink sink_;
  std::unique_ptr<WebhookSender> webhook_;  // null without a webhook url

  mutable util::Mutex mu_;
  telemetry::AlertEngine engine_ TY_GUARDED_BY(mu_);
  std::deque<telemetry::Alert> resolved_ TY_GUARDED_BY(mu_);  // oldest first, bounded
};

// The API's and the webhook's rendering of an alert (docs/api.md, docs/alerts.md).
nlohmann::json alert_json(const telemetry::Alert& alert);
// The webhook body for one transition: Alertmanager's webhook shape (version 4, one alert) so
// that receivers written for Alertmanager accept it, plus the alert as the API shows it.
nlohmann::json webhook_json(const telemetry::Alert& alert);

}  // namespace trainyard::server
