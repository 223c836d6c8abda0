// The alerts of the HTTP API as plain structs (docs/api.md, docs/alerts.md): GET /api/v1/alerts
// (`trainyard alerts`), and the `alert` object of an alert webhook. As in model/api_views.h,
// the server writes its replies from them and the CLI reads replies back into them, so each
// key name is written once (api_alert_views.cc); from_json names the first missing or
// ill-typed field by its path and never throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace trainyard::model {

// A job an alert is about; its name null for tokens of other teams.
struct AlertJobView {
  int64_t id = 0;
  std::optional<std::string> name;
  std::string team;
  bool operator==(const AlertJobView&) const = default;
};

struct AlertGpuView {
  std::string uuid;
  int index = 0;
  std::string model;
  bool operator==(const AlertGpuView&) const = default;
};

// What an alert is about: a device (gpu), jobs, a team, or several of them.
struct AlertSubjectView {
  std::optional<AlertGpuView> gpu;  // null for team alerts
  std::vector<AlertJobView> jobs;
  std::string team;  // "" for device alerts
  bool operator==(const AlertSubjectView&) const = default;
};

struct AlertView {
  int64_t id = 0;
  std::string rule;
  std::string severity;  // warning or critical
  std::string state;     // firing or resolved
  AlertSubjectView subject;
  std::string summary;
  std::optional<std::string> resolution;  // null while firing
  std::string started_at;
  std::optional<std::string> resolved_at;  // null while firing
  bool operator==(const AlertView&) const = default;
};

// GET /api/v1/alerts.
struct AlertListView {
  std::vector<AlertView> items;
  bool operator==(const AlertListView&) const = default;
};

nlohmann::json to_json(const AlertView& v);
nlohmann::json to_json(const AlertListView& v);

util::Status from_json(const nlohmann::json& j, AlertView& out);
util::Status from_json(const nlohmann::json& j, AlertListView& out);

}  // namespace trainyard::model
