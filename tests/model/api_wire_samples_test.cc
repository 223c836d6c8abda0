// Replies a running server wrote (tests/data/api-replies/: GET /api/v1/gpus, a job's telemetry
// with and without raw samples, cost and its series, doctor, checkpoints, alerts, captured from
// `trainyard server --gpus sim:2xH100-80GB --provider simcloud` before these endpoints had
// views) read into their views and write the same bytes again: the views keep every key, null
// and number format of the wire.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "model/api_alert_views.h"
#include "model/api_cost_views.h"
#include "model/api_job_health_views.h"
#include "model/api_telemetry_views.h"
#include "model/api_views.h"

namespace trainyard::model {
namespace {

std::string reply_text(const std::string& name) {
  std::ifstream in(std::string(TY_SOURCE_DIR) + "/tests/data/api-replies/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename View>
void expect_same_bytes(const std::string& name) {
  const std::string text = reply_text(name);
  ASSERT_FALSE(text.empty()) << name;
  auto view = view_from_json<View>(nlohmann::json::parse(text));
  ASSERT_TRUE(view.is_ok()) << name << ": " << view.status().message();
  EXPECT_EQ(to_json(*view).dump(), text) << name;
}

TEST(ApiWireSamples, GpusAndTelemetry) {
  expect_same_bytes<GpuListView>("gpus.json");
  expect_same_bytes<JobTelemetryView>("telemetry_1.json");
  expect_same_bytes<JobTelemetryView>("telemetry_raw_1.json");
}

TEST(ApiWireSamples, Cost) {
  expect_same_bytes<CostReportView>("cost.json");
  expect_same_bytes<CostReportView>("cost_vision.json");
  expect_same_bytes<CostSeriesView>("cost_series.json");
}

TEST(ApiWireSamples, DoctorCheckpointsAlerts) {
  expect_same_bytes<DoctorReplyView>("doctor_1.json");
  expect_same_bytes<CheckpointListView>("checkpoints_1.json");
  expect_same_bytes<AlertListView>("alerts_all.json");
}

}  // namespace
}  // namespace trainyard::model
