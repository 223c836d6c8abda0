// The alert views (model/api_alert_views.h): GET /api/v1/alerts reads back what it writes, with
// null for what a firing alert or a team alert lacks, and a reply with a missing or ill-typed
// field is refused by its path.
#include "model/api_alert_views.h"

#include <gtest/gtest.h>

#include "tests/model/api_round_trip.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

AlertListView alerts() {
  AlertView device{
      .id = 3,
      .rule = "gpu-temperature",
      .severity = "warning",
      .state = "firing",
      .subject = {.gpu = AlertGpuView{.uuid = "GPU-sim-0", .index = 0, .model = "H100-80GB"},
                  .jobs = {{.id = 4, .name = "train", .team = "vision"}, {.id = 5, .team = "nlp"}}},
      .summary = "GPU 0 at 91 C",
      .started_at = "2026-11-26T06:00:01.000Z"};
  AlertView budget{.id = 4,
                   .rule = "team-budget",
                   .severity = "critical",
                   .state = "resolved",
                   .subject = {.team = "vision"},
                   .summary = "spent 5.2 of 5 USD",
                   .resolution = "a new day",
                   .started_at = "2026-11-25T23:00:00.000Z",
                   .resolved_at = "2026-11-26T00:00:00.000Z"};
  return {.items = {device, budget}};
}

TEST(ApiAlertViews, RoundTrip) {
  EXPECT_EQ(round_trip(alerts()), alerts());
  EXPECT_EQ(round_trip(AlertListView{}), AlertListView{});
  EXPECT_EQ(round_trip(alerts().items[1]), alerts().items[1]);  // the webhook's `alert`
}

TEST(ApiAlertViews, WritesTheDocumentedKeys) {
  const json j = to_json(alerts());
  EXPECT_TRUE(j["items"][0]["resolution"].is_null());
  EXPECT_TRUE(j["items"][0]["resolvedAt"].is_null());
  EXPECT_TRUE(j["items"][0]["subject"]["jobs"][1]["name"].is_null());
  EXPECT_EQ(j["items"][0]["subject"]["team"], "");
  EXPECT_TRUE(j["items"][1]["subject"]["gpu"].is_null());
  EXPECT_EQ(j["items"][1]["subject"]["jobs"], json::array());
}

TEST(ApiAlertViews, MissingOrIllTypedFieldIsNamed) {
  json j = to_json(alerts());
  j["items"][0]["subject"]["gpu"].erase("index");
  EXPECT_EQ(view_from_json<AlertListView>(j).status().message(),
            "field 'items[0].subject.gpu.index' is missing (expected an integer)");
  j = to_json(alerts());
  j["items"][1]["startedAt"] = 1795600800;
  EXPECT_EQ(view_from_json<AlertListView>(j).status().message(),
            "field 'items[1].startedAt' is an integer, expected a string");
}

}  // namespace
}  // namespace trainyard::model
