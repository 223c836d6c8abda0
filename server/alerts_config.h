// The `alerts:` section of the server's configuration file: which alert rules run, their
// thresholds (defaults and sources in telemetry/alerts.h, docs/alerts.md) and where alert
// transitions are POSTed. Parsed by parse_alerts_config(), called from config.cc.
#pragma once

#include <optional>
#include <string>

#include "telemetry/alerts.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::model {
class YamlReader;
struct YamlField;
}  // namespace trainyard::model

namespace trainyard::server {

struct WebhookConfig {
  std::string url;  // "" = no webhook; http:// or https://
  util::Duration timeout = std::chrono::seconds(5);
};

struct AlertsConfig {
  bool enabled = true;
  telemetry::AlertRules rules;
  WebhookConfig webhook;
  int keep_resolved = 200;  // resolved alerts kept in memory for GET /api/v1/alerts?all=1
};

// `section` is the `alerts:` field of the config file read by `r`; errors read
// `file:line:column: alerts.x must be ..., got "..."` (model/yaml_reader.h).
util::Status parse_alerts_config(const model::YamlReader& r, const model::YamlField& section,
                                 AlertsConfig& out);

// "90s", "5m", "1.5h", "500ms", or a plain number of seconds -> milliseconds; nullopt otherwise.
std::optional<int64_t> parse_duration_ms(const std::string& text);

}  // namespace trainyard::server
