// The alerts of the API (api_alert_views.h): the only place their key names are written.
#include "model/api_alert_views.h"

#include "model/internal/api_json.h"

namespace trainyard::model {

using api_json::FieldReader;
using api_json::Json;
using api_json::or_null;
using api_json::read_view;

namespace {

Json subject_json(const AlertSubjectView& s) {
  Json jobs = Json::array();
  for (const auto& j : s.jobs)
    jobs.push_back({{"id", j.id}, {"name", or_null(j.name)}, {"team", j.team}});
  Json gpu = nullptr;
  if (s.gpu) gpu = {{"uuid", s.gpu->uuid}, {"index", s.gpu->index}, {"model", s.gpu->model}};
  return {{"gpu", std::move(gpu)}, {"jobs", std::move(jobs)}, {"team", s.team}};
}

}  // namespace

Json to_json(const AlertView& v) {
  return {{"id", v.id},
          {"rule", v.rule},
          {"severity", v.severity},
          {"state", v.state},
          {"subject", subject_json(v.subject)},
          {"summary", v.summary},
          {"resolution", or_null(v.resolution)},
          {"startedAt", v.started_at},
          {"resolvedAt", or_null(v.resolved_at)}};
}

Json to_json(const AlertListView& v) {
  Json items = Json::array();
  for (const auto& a : v.items) items.push_back(to_json(a));
  return {{"items", std::move(items)}};
}

// ---- readers ---------------------------------------------------------------------------------

void read_fields(FieldReader& r, AlertJobView& j) {
  r.required("id", j.id).nullable("name", j.name).required("team", j.team);
}

void read_fields(FieldReader& r, AlertGpuView& g) {
  r.required("uuid", g.uuid).required("index", g.index).required("model", g.model);
}

void read_fields(FieldReader& r, AlertSubjectView& s) {
  r.nullable("gpu", s.gpu).required("jobs", s.jobs).required("team", s.team);
}

void read_fields(FieldReader& r, AlertView& a) {
  r.required("id", a.id)
      .required("rule", a.rule)
      .required("severity", a.severity)
      .required("state", a.state)
      .required("subject", a.subject)
      .required("summary", a.summary)
      .nullable("resolution", a.resolution)
      .required("startedAt", a.started_at)
      .nullable("resolvedAt", a.resolved_at);
}

void read_fields(FieldReader& r, AlertListView& v) {
  r.required("items", v.items);
}

util::Status from_json(const Json& j, AlertView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, AlertListView& out) {
  return read_view(j, out);
}

}  // namespace trainyard::model
