// An alert as the API (GET /api/v1/alerts) and the alert webhook's `alert` object show it: the
// typed view of model/api_alert_views.h built from the engine's telemetry::Alert, job names in
// full (alerts_views.cc leaves out those of other teams' jobs).
#pragma once

#include "model/api_alert_views.h"
#include "telemetry/alerts.h"

namespace trainyard::server {

model::AlertView alert_view(const telemetry::Alert& alert);

}  // namespace trainyard::server
