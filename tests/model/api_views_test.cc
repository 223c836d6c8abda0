// The API views (model/api_views.h): every view reads back what it writes, the job's resources
// keep the spec's own form, and a reply with a missing or ill-typed field is refused with the
// field's path.
#include "model/api_views.h"

#include <gtest/gtest.h>

#include "model/job_manifest.h"
#include "tests/model/api_round_trip.h"

namespace trainyard::model {
namespace {

using nlohmann::json;

PlacementView gpu_placement(int worker, int gpu) {
  return {.worker = worker,
          .node = "vm",
          .gpu = gpu,
          .milli = 1000,
          .device = "GPU-sim-" + std::to_string(gpu)};
}

JobView running_job() {
  JobView v;
  v.id = 12;
  v.name = "train";
  v.team = "vision";
  v.state = JobState::Running;
  v.attempt = 2;
  v.priority = 1000;
  v.failures = 1;
  v.submitted = "2026-11-22T21:04:21.089Z";
  v.started = "2026-11-22T21:04:21.098Z";
  v.updated = "2026-11-22T21:04:21.138Z";
  v.reason = "started 1 worker(s), pids 8290";
  v.attained_gpu_seconds = 12.5;
  v.placement = {gpu_placement(0, 2),
                 gpu_placement(0, 3),
                 {.worker = 1,
                  .node = "vm",
                  .gpu = 1,
                  .milli = 0,
                  .device = "MIG-1",
                  .mig_profile = "1g.10gb",
                  .mig_start = 4}};
  v.request = JobRequestView{
      .workers = 2,
      .resources = {.gpus = 2, .cpu = CpuMilli(1500), .memory = Bytes(int64_t{8} << 30)},
      .labels = {{"sweep", "lr"}, {"stage", "train"}}};
  v.held = false;
  v.array = JobArrayView{.job_id = 10, .index = 2, .limit = 4};
  v.measured_steps_per_second = {{2, 1.9}, {4, 3.4}};
  v.stopping = "preempt";
  v.progress = JobProgressView{.attempt = 2,
                               .step = 121,
                               .total_steps = 5000,
                               .fraction = 0.0242,
                               .steps_per_second = 19.84,
                               .reported = "2026-11-26T06:13:26.832Z",
                               .eta_seconds = 246,
                               .finish_estimate = "2026-11-26T06:17:32.693Z"};
  return v;
}

JobView pending_job() {
  JobView v;
  v.id = 13;
  v.name = "wait";
  v.team = "default";
  v.submitted = "2026-11-22T21:04:21.089Z";
  v.updated = v.submitted;
  v.reason = "submitted";
  v.request = JobRequestView{.resources = {.gpu_milli = GpuMilli(500)}};
  v.held = true;
  v.waiting = "held by user";
  v.start_estimate = StartEstimateView{.basis = "unknown", .reason = "it is held"};
  return v;
}

TEST(ApiViews, JobRoundTrips) {
  EXPECT_EQ(round_trip(running_job()), running_job());
  EXPECT_EQ(round_trip(pending_job()), pending_job());
  JobView bare = pending_job();
  bare.request.reset();  // a stored spec that cannot be read
  bare.start_estimate = StartEstimateView{.at = "2026-11-26T10:20:00Z",
                                          .basis = "replay",
                                          .reason = "after job 12 ends by runtime limit"};
  EXPECT_EQ(round_trip(bare), bare);
}

TEST(ApiViews, JobWritesTheDocumentedKeys) {
  const json j = to_json(pending_job());
  EXPECT_EQ(j["state"], "pending");
  EXPECT_TRUE(j["started"].is_null());
  EXPECT_TRUE(j["placement"].is_array());
  EXPECT_EQ(j["resources"], json::parse(R"({"cpu": 0, "memory": "0Gi", "nvidia.com/gpu": 0.5})"));
  EXPECT_TRUE(j["estimatedStart"].is_null());
  EXPECT_FALSE(j.contains("stopping"));
  EXPECT_FALSE(j.contains("progress"));
  EXPECT_FALSE(j.contains("array"));
  EXPECT_FALSE(j.contains("measuredStepsPerSecond"));
  const json r = to_json(running_job());
  EXPECT_EQ(r["measuredStepsPerSecond"], json::parse(R"({"2": 1.9, "4": 3.4})"));
  EXPECT_EQ(r["array"], json::parse(R"({"jobId": 10, "index": 2, "limit": 4})"));
  EXPECT_EQ(r["placement"][2]["mig_profile"], "1g.10gb");
  EXPECT_FALSE(r["placement"][0].contains("mig_profile"));
}

// `resources` is the spec's resources.limits: the same JSON the canonical spec holds.
TEST(ApiViews, ResourcesAreTheSpecsLimits) {
  for (const char* limits : {R"({"nvidia.com/gpu": 2, "cpu": 4, "memory": "16Gi"})",
                             R"({"nvidia.com/gpu": 0.25, "cpu": "500m", "memory": "512Mi"})",
                             R"({"nvidia.com/mig-1g.10gb": 1})", R"({"cpu": 1})"}) {
    const std::string spec = std::string(R"({"apiVersion": "trainyard.dev/v1", "kind": "Job",
        "metadata": {"name": "x"}, "spec": {"template": {"command": ["true"],
        "resources": {"limits": )") +
                             limits + "}}}}";
    auto m = parse_job_manifest(spec, "job.json");
    ASSERT_TRUE(m.is_ok()) << m.status().message();
    const json stored = json::parse(job_manifest_to_json(*m));
    const json& want = stored["spec"]["template"]["resources"]["limits"];
    EXPECT_EQ(to_json(m->spec.worker), want) << limits;
    JobView v = pending_job();
    v.request->resources = m->spec.worker;
    EXPECT_EQ(round_trip(v).request->resources, m->spec.worker) << limits;
  }
}

TEST(ApiViews, DetailListEventsAndArrayCancelRoundTrip) {
  JobDetailView d{
      .job = running_job(),
      .spec = json::parse(R"({"apiVersion": "trainyard.dev/v1", "spec": {"workers": 2}})"),
      .attempts = {{.attempt = 1,
                    .started = "2026-11-22T21:00:00.000Z",
                    .ended = "2026-11-22T21:01:00.000Z",
                    .outcome = "preempted",
                    .exit_code = 143,
                    .placement = {gpu_placement(0, 0)},
                    .processes = json::parse(R"([{"rank": 0, "pid": 7}])")},
                   {.attempt = 2,
                    .started = "2026-11-22T21:04:21.098Z",
                    .placement = {gpu_placement(0, 2)},
                    .processes = json::array()}},
      .metrics = JobMetricsView{.attempt = 2,
                                .lines = 40,
                                .last = json::parse(R"({"step": 121, "loss": 0.5})"),
                                .tuned = json::parse(R"({"tune_micro_batch": 64})")},
      .checkpoint =
          CheckpointSummaryView{.step = 100, .bytes = 4096, .created = "2026-11-22T21:05:00Z"},
      .steps_since_checkpoint = 21,
      .utilization = UtilizationView{.samples = 4210,
                                     .devices = 2,
                                     .from = "2026-11-22T20:00:00.000Z",
                                     .to = "2026-11-22T20:35:09.000Z",
                                     .gpu_util_avg = 91.4,
                                     .memory_total_bytes = 85899345920.0,
                                     .throttle_reasons = 4}};
  EXPECT_EQ(round_trip(d), d);
  JobDetailView untuned = d;
  untuned.metrics->tuned = json();
  untuned.utilization = UtilizationView{};
  EXPECT_FALSE(to_json(untuned)["metrics"].contains("tuned"));
  EXPECT_EQ(round_trip(untuned), untuned);

  JobListView list{.items = {running_job(), pending_job()},
                   .has_more = true,
                   .total = 25,
                   .next_cursor = "n:id:3:",
                   .next_before = 3};
  EXPECT_EQ(round_trip(list), list);
  EXPECT_EQ(round_trip(JobListView{}), JobListView{});

  SubmitReplyView submitted{.job = pending_job(), .array_tasks = 3, .last_id = 15};
  EXPECT_EQ(round_trip(submitted), submitted);
  submitted.idempotent_replay = true;
  EXPECT_EQ(round_trip(submitted), submitted);

  JobEventListView events{.items = {{.seq = 9,
                                     .time = "2026-11-22T21:04:21.089Z",
                                     .type = "Submitted",
                                     .to = "pending",
                                     .reason = "submitted by anonymous"},
                                    {.seq = 11,
                                     .time = "2026-11-22T21:04:21.098Z",
                                     .type = "Transition",
                                     .from = "pending",
                                     .to = "admitted",
                                     .attempt = 1,
                                     .reason = "admitted"}}};
  EXPECT_EQ(round_trip(events), events);
  ArrayCancelView cancelled{.array_job_id = 12, .cancelled = {13, 14}, .cancelling = {12}};
  EXPECT_EQ(round_trip(cancelled), cancelled);
}

TEST(ApiViews, MissingFieldIsNamedWithItsPath) {
  json j = to_json(JobListView{.items = {running_job(), pending_job()}});
  j["items"][1].erase("state");
  auto v = view_from_json<JobListView>(j);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(v.status().message(), "field 'items[1].state' is missing (expected a string)");
}

TEST(ApiViews, IllTypedFieldIsNamedWithItsPath) {
  json j = to_json(running_job());
  j["placement"][1]["gpu"] = "3";
  auto v = view_from_json<JobView>(j);
  ASSERT_FALSE(v.is_ok());
  EXPECT_EQ(v.status().message(), "field 'placement[1].gpu' is a string, expected an integer");

  j = to_json(running_job());
  j["state"] = "sleeping";
  EXPECT_EQ(view_from_json<JobView>(j).status().message(),
            "field 'state' is 'sleeping', not a job state");

  j = to_json(running_job());
  j["submitted"] = nullptr;  // nullable: fine
  EXPECT_TRUE(view_from_json<JobView>(j).is_ok());
  j["reason"] = nullptr;  // not nullable
  EXPECT_EQ(view_from_json<JobView>(j).status().message(),
            "field 'reason' is null, expected a string");

  EXPECT_EQ(view_from_json<JobView>(json::array()).status().message(),
            "the reply is an array, expected an object");
}

}  // namespace
}  // namespace trainyard::model
