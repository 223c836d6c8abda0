// The cost views (model/api_cost_views.h): GET /api/v1/cost and /api/v1/cost/series read back
// what they write, in their snake_case keys, and a reply with a missing or ill-typed field is
// refused by its path.
#include "model/api_cost_views.h"

#include <gtest/gtest.h>

#include "tests/model/api_round_trip.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

CostReportView report() {
  const CostTotalsView some{.cost_usd = 1.25,
                            .gpu_hours = 0.5,
                            .lost_gpu_hours = 0.01,
                            .lost_cost_usd = 0.0125,
                            .interruptions = 1};
  return {.since = "2026-11-01T00:00:00Z",
          .until = "2026-11-26T12:00:00Z",
          .scope = "all",
          .total = {.cost_usd = 3, .gpu_hours = 1, .idle_gpu_hours = 0.5, .idle_cost_usd = 1.75},
          .jobs = {{.job = "4", .name = "train", .team = "vision", .totals = some},
                   {.job = "x", .team = "nlp"}},
          .teams = {{.team = "vision", .totals = some}},
          .pools = {{.pool = "v100-spot", .totals = some}}};
}

CostSeriesView series() {
  return {.since = "2026-11-26T10:00:00Z",
          .until = "2026-11-26T12:00:00Z",
          .scope = "team",
          .step = "hour",
          .step_seconds = 3600,
          .times = {1795600800, 1795604400},
          .total_cost_usd = {0.0, 1.5},
          .lost_cost_usd = {0.0, 0.0},
          .lost_gpu_hours = {0.0, 0.25},
          .teams = {{.team = "vision", .cost_usd = {0.0, 1.5}}},
          .pools = {{.pool = "v100-spot", .cost_usd = {0.5, 1.0}}}};
}

TEST(ApiCostViews, ReportRoundTrip) {
  EXPECT_EQ(round_trip(report()), report());
  EXPECT_EQ(round_trip(CostReportView{}), CostReportView{});
}

TEST(ApiCostViews, ReportWritesTheDocumentedKeys) {
  const json j = to_json(report());
  EXPECT_EQ(j["jobs"][0]["job"], "4");
  EXPECT_EQ(j["jobs"][1]["name"], "");
  EXPECT_EQ(j["jobs"][0]["interruptions"], 1);
  EXPECT_EQ(j["total"]["cost_usd"].dump(), "3.0");
  EXPECT_EQ(j["teams"][0].size(), 8u);  // the totals and the team
  EXPECT_EQ(j["pools"][0]["pool"], "v100-spot");
}

TEST(ApiCostViews, SeriesRoundTrip) {
  EXPECT_EQ(round_trip(series()), series());
  const json j = to_json(series());
  EXPECT_EQ(j["idle_cost_usd"], json::array());  // a team sees no idle cost
  EXPECT_EQ(j["total_cost_usd"].dump(), "[0.0,1.5]");
  EXPECT_EQ(j["times"][1], 1795604400);
}

TEST(ApiCostViews, MissingOrIllTypedFieldIsNamed) {
  json j = to_json(report());
  j["jobs"][1].erase("lost_cost_usd");
  EXPECT_EQ(view_from_json<CostReportView>(j).status().message(),
            "field 'jobs[1].lost_cost_usd' is missing (expected a number)");
  j = to_json(report());
  j["total"]["interruptions"] = 1.5;
  EXPECT_EQ(view_from_json<CostReportView>(j).status().message(),
            "field 'total.interruptions' is a number with a fraction, expected an integer");
  j = to_json(series());
  j["pools"][0]["cost_usd"][1] = nullptr;
  EXPECT_EQ(view_from_json<CostSeriesView>(j).status().message(),
            "field 'pools[0].cost_usd[1]' is null, expected a number");
}

}  // namespace
}  // namespace trainyard::model
