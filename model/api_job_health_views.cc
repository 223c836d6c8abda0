// The doctor and checkpoint resources of the API (api_job_health_views.h): the only place their
// key names are written.
#include "model/api_job_health_views.h"

#include "model/internal/api_json.h"

namespace trainyard::model {

using api_json::FieldReader;
using api_json::Json;
using api_json::read_view;

namespace {

// The keys the server adds to the diagnosis; the rest of the reply is the diagnosis.
constexpr const char* kDoctorJobKeys[] = {"name", "team", "state", "notes"};

}  // namespace

Json to_json(const DoctorReplyView& v) {
  Json j = v.diagnosis.is_object() ? v.diagnosis : Json::object();
  j["name"] = v.name;
  j["team"] = v.team;
  j["state"] = v.state;
  if (!v.notes.empty()) j["notes"] = v.notes;
  return j;
}

Json to_json(const CheckpointListView& v) {
  Json items = Json::array();
  for (const auto& c : v.items) {
    items.push_back({{"step", c.step},
                     {"path", c.path},
                     {"bytes", c.bytes},
                     {"created", c.created},
                     {"verified", c.verified},
                     {"problem", c.problem}});
  }
  return {{"dir", v.dir}, {"items", std::move(items)}};
}

// ---- readers ---------------------------------------------------------------------------------

void read_fields(FieldReader& r, DoctorReplyView& v) {
  std::optional<std::vector<std::string>> notes;
  r.required("name", v.name)
      .required("team", v.team)
      .required("state", v.state)
      .optional("notes", notes);
  v.notes = notes.value_or(std::vector<std::string>{});
  v.diagnosis = r.json();
  for (const char* key : kDoctorJobKeys) v.diagnosis.erase(key);
}

void read_fields(FieldReader& r, CheckpointView& c) {
  r.required("step", c.step)
      .required("path", c.path)
      .required("bytes", c.bytes)
      .required("created", c.created)
      .required("verified", c.verified)
      .required("problem", c.problem);
}

void read_fields(FieldReader& r, CheckpointListView& v) {
  r.required("dir", v.dir).required("items", v.items);
}

util::Status from_json(const Json& j, DoctorReplyView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, CheckpointListView& out) {
  return read_view(j, out);
}

}  // namespace trainyard::model
