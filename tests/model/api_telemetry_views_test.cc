// The GPU telemetry views (model/api_telemetry_views.h): GET /api/v1/gpus and a job's telemetry
// read back what they write, keep integers integers and absent measurements null, and a reply
// with a missing or ill-typed field is refused by its path.
#include "model/api_telemetry_views.h"

#include <gtest/gtest.h>

#include "tests/model/api_round_trip.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

GpuMeasurementsView measured() {
  return {.time = "2026-11-26T06:00:01.500Z",
          .gpu_util_percent = 97.0,
          .mem_util_percent = 41.5,
          .energy_millijoules = 123456789,
          .memory_used_bytes = 42949672960,
          .memory_total_bytes = 85899345920,
          .temperature_c = 71.0,
          .power_w = 612.25,
          .throttle_reasons = 0,
          .last_xid = 79,
          .xid_count = 1};
}

GpuListView gpus() {
  GpuDeviceView full{
      .index = 0,
      .uuid = "GPU-sim-0",
      .name = "Simulated H100-80GB",
      .model = "H100-80GB",
      .pci_bus_id = "00000000:00:00.0",
      .measurements = measured(),
      .jobs = {{.id = 4, .team = "vision", .name = "train"}, {.id = 5, .team = "nlp"}},
      .processes = {{.pid = 4242,
                     .memory_bytes = 1024,
                     .sm_util_percent = 80.0,
                     .job = 4,
                     .user = "alice",
                     .command = "python train.py"},
                    {.pid = 99}}};
  GpuDeviceView mig{.index = 1,
                    .uuid = "MIG-sim-1-0",
                    .mig = true,
                    .mig_profile = "1g.10gb",
                    .gpu_instance_id = 7,
                    .measurements = {.time = "2026-11-26T06:00:01.500Z"}};
  return {.items = {full, mig}, .interval_seconds = 1.0};
}

JobTelemetryView telemetry() {
  return {.job = 4,
          .interval_seconds = 2.5,
          .summary = {.samples = 61,
                      .devices = 1,
                      .from = "2026-11-26T06:00:00.000Z",
                      .to = "2026-11-26T06:01:00.000Z",
                      .gpu_util_avg = 88.5,
                      .memory_total_bytes = 85899345920.0,
                      .throttle_reasons = 64},
          .minutes = {{.device = "GPU-sim-0",
                       .minute = "2026-11-26T06:00:00.000Z",
                       .samples = 60,
                       .gpu_util_avg = 88.0,
                       .memory_used_avg_bytes = 1.5e9,
                       .memory_used_max_bytes = 2000000000,
                       .throttle_reasons = 64,
                       .last_xid = 13},
                      {.device = "GPU-sim-0",
                       .minute = "2026-11-26T06:01:00.000Z",
                       .samples = 1,
                       .partial = true}},
          .samples = {{.device = "GPU-sim-0", .measurements = measured()}}};
}

TEST(ApiTelemetryViews, GpusRoundTrip) {
  EXPECT_EQ(round_trip(gpus()), gpus());
  EXPECT_EQ(round_trip(GpuListView{}), GpuListView{});
}

TEST(ApiTelemetryViews, GpusWriteTheDocumentedKeys) {
  const json j = to_json(gpus());
  const json& d = j["items"][0];
  EXPECT_EQ(d["gpuUtilPercent"].dump(), "97.0");  // a number stays a number with a fraction
  EXPECT_EQ(d["memoryUsedBytes"].dump(), "42949672960");
  EXPECT_TRUE(d["smActivePercent"].is_null());  // not measured: null, not absent
  EXPECT_TRUE(d["gpuInstanceId"].is_null());
  EXPECT_EQ(d["migProfile"], "");
  EXPECT_EQ(d["jobs"][1], json::parse(R"({"id": 5, "team": "nlp", "name": null})"));
  EXPECT_EQ(d["processes"][1], json::parse(R"({"pid": 99, "memoryBytes": null,
      "smUtilPercent": null, "job": null, "user": null, "command": null})"));
  EXPECT_EQ(j["items"][1]["processes"], json::array());
  EXPECT_TRUE(to_json(GpuListView{})["intervalSeconds"].is_null());
}

TEST(ApiTelemetryViews, JobTelemetryRoundTrip) {
  EXPECT_EQ(round_trip(telemetry()), telemetry());
  const json j = to_json(telemetry());
  EXPECT_FALSE(j["minutes"][0].contains("partial"));  // only the minute in progress says so
  EXPECT_EQ(j["minutes"][1]["partial"], true);
  EXPECT_EQ(j["samples"][0]["device"], "GPU-sim-0");
  EXPECT_EQ(j["samples"][0]["powerW"], 612.25);
  EXPECT_EQ(j["summary"]["throttleReasons"], 64);
}

TEST(ApiTelemetryViews, MissingOrIllTypedFieldIsNamed) {
  json j = to_json(gpus());
  j["items"][0]["processes"][0].erase("job");
  EXPECT_EQ(view_from_json<GpuListView>(j).status().message(),
            "field 'items[0].processes[0].job' is missing (expected an integer)");
  j = to_json(gpus());
  j["items"][1]["memoryUsedBytes"] = "1 GiB";
  EXPECT_EQ(view_from_json<GpuListView>(j).status().message(),
            "field 'items[1].memoryUsedBytes' is a string, expected an integer");
  j = to_json(telemetry());
  j["minutes"][1]["samples"] = 1.5;
  EXPECT_EQ(view_from_json<JobTelemetryView>(j).status().message(),
            "field 'minutes[1].samples' is a number with a fraction, expected an integer");
  j = to_json(telemetry());
  j["summary"].erase("devices");
  EXPECT_EQ(view_from_json<JobTelemetryView>(j).status().message(),
            "field 'summary.devices' is missing (expected an integer)");
}

}  // namespace
}  // namespace trainyard::model
