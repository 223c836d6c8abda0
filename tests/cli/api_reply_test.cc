// The CLI's reading of server replies (cli/api_reply.h): a reply the views cannot read is an
// error that names the endpoint and the field (exit 1, as any failure), never an exception.
#include "cli/api_reply.h"

#include "model/api_alert_views.h"
#include "model/api_cost_views.h"
#include "model/api_job_health_views.h"
#include "model/api_telemetry_views.h"

#include <gtest/gtest.h>

namespace trainyard::cli {
namespace {

using nlohmann::json;

json job_reply() {
  model::JobView v{.id = 3, .name = "train", .team = "default", .reason = "submitted"};
  v.submitted = "2026-11-22T21:04:21.089Z";
  return model::to_json(v);
}

TEST(ApiReply, ReadsAJobReply) {
  auto job = read_reply<model::JobView>(job_reply(), "GET /api/v1/jobs/3");
  ASSERT_TRUE(job.is_ok()) << job.status().message();
  EXPECT_EQ(job->id, 3);
  EXPECT_EQ(job->state, model::JobState::Pending);
}

TEST(ApiReply, MissingFieldNamesTheEndpointAndTheField) {
  json reply = job_reply();
  reply.erase("state");
  auto job = read_reply<model::JobView>(reply, "GET /api/v1/jobs/3");
  ASSERT_FALSE(job.is_ok());
  EXPECT_EQ(job.status().message(),
            "GET /api/v1/jobs/3: unexpected reply: field 'state' is missing (expected a string); "
            "the server may run another version of trainyard (see docs/api.md)");
  EXPECT_EQ(job.status().code(), util::StatusCode::Internal);  // exit 1, as any failure
}

TEST(ApiReply, IllTypedFieldInAListNamesItsIndex) {
  json item = job_reply();
  item["attempt"] = "1";
  const json reply = {{"items", {job_reply(), item}}, {"hasMore", false}};
  auto list = read_reply<model::JobListView>(reply, "GET /api/v1/jobs?limit=100");
  ASSERT_FALSE(list.is_ok());
  EXPECT_NE(list.status().message().find("GET /api/v1/jobs?limit=100: unexpected reply: field "
                                         "'items[1].attempt' is a string, expected an integer"),
            std::string::npos)
      << list.status().message();
}

TEST(ApiReply, ReplyThatIsNotAnObject) {
  auto events = read_reply<model::JobEventListView>(json("oops"), "GET /api/v1/jobs/3/events");
  ASSERT_FALSE(events.is_ok());
  EXPECT_NE(events.status().message().find("the reply is a string, expected an object"),
            std::string::npos);
}

// The replies of top, telemetry, alerts, cost, doctor and checkpoints fail the same way.
TEST(ApiReply, OtherEndpointsNameTheEndpointAndTheField) {
  json gpus = model::to_json(model::GpuListView{.items = {{.index = 0}}});
  gpus["items"][0].erase("uuid");
  EXPECT_EQ(read_reply<model::GpuListView>(gpus, "GET /api/v1/gpus").status().message(),
            "GET /api/v1/gpus: unexpected reply: field 'items[0].uuid' is missing (expected a "
            "string); the server may run another version of trainyard (see docs/api.md)");
  json cost = model::to_json(model::CostReportView{});
  cost["total"]["cost_usd"] = "1.5";
  EXPECT_NE(read_reply<model::CostReportView>(cost, "GET /api/v1/cost")
                .status()
                .message()
                .find("GET /api/v1/cost: unexpected reply: field 'total.cost_usd' is a string, "
                      "expected a number"),
            std::string::npos);
  json alerts = {{"items", {{{"id", 1}}}}};
  EXPECT_NE(read_reply<model::AlertListView>(alerts, "GET /api/v1/alerts")
                .status()
                .message()
                .find("field 'items[0].rule' is missing"),
            std::string::npos);
  json telemetry = model::to_json(model::JobTelemetryView{.job = 3});
  telemetry.erase("summary");
  EXPECT_NE(read_reply<model::JobTelemetryView>(telemetry, "GET /api/v1/jobs/3/telemetry")
                .status()
                .message()
                .find("GET /api/v1/jobs/3/telemetry: unexpected reply: field 'summary' is missing"),
            std::string::npos);
  json doctor =
      model::to_json(model::DoctorReplyView{.name = "t", .team = "x", .state = "running"});
  doctor["state"] = nullptr;
  EXPECT_NE(read_reply<model::DoctorReplyView>(doctor, "GET /api/v1/jobs/3/doctor")
                .status()
                .message()
                .find("field 'state' is null, expected a string"),
            std::string::npos);
  json checkpoints = {{"dir", "/c"}, {"items", {{{"step", "400"}}}}};
  EXPECT_NE(read_reply<model::CheckpointListView>(checkpoints, "GET /api/v1/jobs/3/checkpoints")
                .status()
                .message()
                .find("field 'items[0].step' is a string, expected an integer"),
            std::string::npos);
}

}  // namespace
}  // namespace trainyard::cli
