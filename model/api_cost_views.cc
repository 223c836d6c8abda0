// The cost resources of the API (api_cost_views.h): the only place their key names are written.
#include "model/api_cost_views.h"

#include "model/internal/api_json.h"

namespace trainyard::model {

using api_json::FieldReader;
using api_json::Json;
using api_json::read_view;

namespace {

Json totals_json(const CostTotalsView& t) {
  return {{"cost_usd", t.cost_usd},
          {"gpu_hours", t.gpu_hours},
          {"idle_gpu_hours", t.idle_gpu_hours},
          {"idle_cost_usd", t.idle_cost_usd},
          {"lost_gpu_hours", t.lost_gpu_hours},
          {"lost_cost_usd", t.lost_cost_usd},
          {"interruptions", t.interruptions}};
}

// A row of totals with its key (`key` = `value`), the way jobs, teams and pools are listed.
Json keyed_totals(const CostTotalsView& t, const char* key, const std::string& value) {
  Json j = totals_json(t);
  j[key] = value;
  return j;
}

}  // namespace

Json to_json(const CostReportView& v) {
  Json jobs = Json::array();
  for (const auto& j : v.jobs) {
    Json row = keyed_totals(j.totals, "job", j.job);
    row["team"] = j.team;
    row["name"] = j.name;
    jobs.push_back(std::move(row));
  }
  Json teams = Json::array();
  for (const auto& t : v.teams) teams.push_back(keyed_totals(t.totals, "team", t.team));
  Json pools = Json::array();
  for (const auto& p : v.pools) pools.push_back(keyed_totals(p.totals, "pool", p.pool));
  return {{"since", v.since},         {"until", v.until},
          {"scope", v.scope},         {"total", totals_json(v.total)},
          {"jobs", std::move(jobs)},  {"teams", std::move(teams)},
          {"pools", std::move(pools)}};
}

Json to_json(const CostSeriesView& v) {
  Json teams = Json::array(), pools = Json::array();
  for (const auto& t : v.teams) teams.push_back({{"team", t.team}, {"cost_usd", t.cost_usd}});
  for (const auto& p : v.pools) pools.push_back({{"pool", p.pool}, {"cost_usd", p.cost_usd}});
  return {{"since", v.since},
          {"until", v.until},
          {"scope", v.scope},
          {"step", v.step},
          {"step_seconds", v.step_seconds},
          {"times", v.times},
          {"total_cost_usd", v.total_cost_usd},
          {"idle_cost_usd", v.idle_cost_usd},
          {"lost_cost_usd", v.lost_cost_usd},
          {"lost_gpu_hours", v.lost_gpu_hours},
          {"teams", std::move(teams)},
          {"pools", std::move(pools)}};
}

// ---- readers ---------------------------------------------------------------------------------

void read_fields(FieldReader& r, CostTotalsView& t) {
  r.required("cost_usd", t.cost_usd)
      .required("gpu_hours", t.gpu_hours)
      .required("idle_gpu_hours", t.idle_gpu_hours)
      .required("idle_cost_usd", t.idle_cost_usd)
      .required("lost_gpu_hours", t.lost_gpu_hours)
      .required("lost_cost_usd", t.lost_cost_usd)
      .required("interruptions", t.interruptions);
}

void read_fields(FieldReader& r, JobCostView& j) {
  r.required("job", j.job).required("name", j.name).required("team", j.team);
  read_fields(r, j.totals);
}

void read_fields(FieldReader& r, TeamCostView& t) {
  r.required("team", t.team);
  read_fields(r, t.totals);
}

void read_fields(FieldReader& r, PoolCostView& p) {
  r.required("pool", p.pool);
  read_fields(r, p.totals);
}

void read_fields(FieldReader& r, CostReportView& v) {
  r.required("since", v.since)
      .required("until", v.until)
      .required("scope", v.scope)
      .required("total", v.total)
      .required("jobs", v.jobs)
      .required("teams", v.teams)
      .required("pools", v.pools);
}

void read_fields(FieldReader& r, TeamCostSeriesView& t) {
  r.required("team", t.team).required("cost_usd", t.cost_usd);
}

void read_fields(FieldReader& r, PoolCostSeriesView& p) {
  r.required("pool", p.pool).required("cost_usd", p.cost_usd);
}

void read_fields(FieldReader& r, CostSeriesView& v) {
  r.required("since", v.since)
      .required("until", v.until)
      .required("scope", v.scope)
      .required("step", v.step)
      .required("step_seconds", v.step_seconds)
      .required("times", v.times)
      .required("total_cost_usd", v.total_cost_usd)
      .required("idle_cost_usd", v.idle_cost_usd)
      .required("lost_cost_usd", v.lost_cost_usd)
      .required("lost_gpu_hours", v.lost_gpu_hours)
      .required("teams", v.teams)
      .required("pools", v.pools);
}

util::Status from_json(const Json& j, CostReportView& out) {
  return read_view(j, out);
}
util::Status from_json(const Json& j, CostSeriesView& out) {
  return read_view(j, out);
}

}  // namespace trainyard::model
