// Two job resources of the HTTP API that come from the job's own files, as plain structs
// (docs/api.md): GET /api/v1/jobs/{id}/doctor (`trainyard doctor JOB`) and
// GET /api/v1/jobs/{id}/checkpoints (`trainyard checkpoints`). As in model/api_views.h, the
// server writes its replies from them and the CLI reads replies back into them, so each key
// name is written once (api_job_health_views.cc); from_json names the first missing or
// ill-typed field by its path and never throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace trainyard::model {

// GET /api/v1/jobs/{id}/doctor: the job doctor's diagnosis with the job's name, team and state.
struct DoctorReplyView {
  // telemetry::to_json(Diagnosis) (job_id, verdict, findings, stats), kept as that layer writes
  // it (model/ cannot name telemetry's types); its keys sit at the top level of the reply.
  nlohmann::json diagnosis = nlohmann::json::object();
  std::string name;
  std::string team;
  std::string state;
  std::vector<std::string> notes;  // why some step metrics were not used; left out when empty
  bool operator==(const DoctorReplyView&) const = default;
};

// A checkpoint of a job, verified against its manifest.
struct CheckpointView {
  int64_t step = 0;
  std::string path;
  int64_t bytes = 0;
  std::string created;  // from the manifest
  bool verified = false;
  std::string problem;  // why it does not verify; "" when it does
  bool operator==(const CheckpointView&) const = default;
};

// GET /api/v1/jobs/{id}/checkpoints: newest first.
struct CheckpointListView {
  std::string dir;
  std::vector<CheckpointView> items;
  bool operator==(const CheckpointListView&) const = default;
};

nlohmann::json to_json(const DoctorReplyView& v);
nlohmann::json to_json(const CheckpointListView& v);

util::Status from_json(const nlohmann::json& j, DoctorReplyView& out);
util::Status from_json(const nlohmann::json& j, CheckpointListView& out);

}  // namespace trainyard::model
