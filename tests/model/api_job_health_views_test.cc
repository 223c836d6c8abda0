// The doctor and checkpoint views (model/api_job_health_views.h): they read back what they
// write (the doctor's diagnosis as the telemetry layer wrote it, with the job's keys beside it),
// and a reply with a missing or ill-typed field is refused by its path.
#include "model/api_job_health_views.h"

#include <gtest/gtest.h>

#include "tests/model/api_round_trip.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

DoctorReplyView doctor() {
  return {.diagnosis = json::parse(R"({"job_id": "4", "verdict": "data-bound",
              "findings": [{"rule": "data-wait", "severity": "warning", "evidence": ["41%"]}],
              "stats": {"devices": 1, "samples": 120, "util_mean_percent": null}})"),
          .name = "train",
          .team = "vision",
          .state = "running",
          .notes = {"attempt 1: step metrics not used: line 3 is not JSON"}};
}

CheckpointListView checkpoints() {
  return {.dir = "/data/ckpt/train",
          .items = {{.step = 400,
                     .path = "/data/ckpt/train/step-400",
                     .bytes = 1048576,
                     .created = "2026-11-26T06:00:00Z",
                     .verified = true},
                    {.step = 200,
                     .path = "/data/ckpt/train/step-200",
                     .created = "2026-11-26T05:00:00Z",
                     .problem = "model.pt: size 12, manifest says 4096"}}};
}

TEST(ApiJobHealthViews, DoctorRoundTrip) {
  EXPECT_EQ(round_trip(doctor()), doctor());
  DoctorReplyView no_notes = doctor();
  no_notes.notes.clear();
  EXPECT_EQ(round_trip(no_notes), no_notes);
  const json j = to_json(no_notes);
  EXPECT_FALSE(j.contains("notes"));      // left out, not empty
  EXPECT_EQ(j["verdict"], "data-bound");  // the diagnosis sits at the top level
  EXPECT_EQ(j["state"], "running");
}

TEST(ApiJobHealthViews, CheckpointsRoundTrip) {
  EXPECT_EQ(round_trip(checkpoints()), checkpoints());
  EXPECT_EQ(round_trip(CheckpointListView{}), CheckpointListView{});
  EXPECT_EQ(to_json(checkpoints())["items"][0]["problem"], "");
}

TEST(ApiJobHealthViews, MissingOrIllTypedFieldIsNamed) {
  json j = to_json(doctor());
  j.erase("team");
  EXPECT_EQ(view_from_json<DoctorReplyView>(j).status().message(),
            "field 'team' is missing (expected a string)");
  j = to_json(doctor());
  j["notes"] = "one note";
  EXPECT_EQ(view_from_json<DoctorReplyView>(j).status().message(),
            "field 'notes' is a string, expected an array");
  j = to_json(checkpoints());
  j["items"][1]["verified"] = "no";
  EXPECT_EQ(view_from_json<CheckpointListView>(j).status().message(),
            "field 'items[1].verified' is a string, expected true or false");
}

}  // namespace
}  // namespace trainyard::model
