// Fixtures for bench/server_bench.cc: an executor that starts nothing, synthetic nodes, a
// temporary state directory, an HttpApi served on a thread, a store filled with finished jobs,
// sched::plan() alone on the snapshot the server would build, and order statistics.
// Header-only and bench-only; not part of any layer's interface.
#pragma once

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>

#include "model/job_manifest.h"
#include "sched/plan.h"
#include "sched/snapshot_builder.h"
#include "server/control_plane.h"
#include "server/http_api.h"

namespace trainyard::bench {

// Starts nothing: launch() hands out increasing fake pids and every worker runs forever.
// Thread-safe (counters are atomics).
class FakeExecutor final : public exec::Executor {
 public:
  util::Result<exec::ProcessRef> launch(const exec::WorkerLaunch& w) override {
    launched_.fetch_add(1);
    gpus_.fetch_add(static_cast<int64_t>(w.visible_devices.size()));
    return exec::ProcessRef{.pid = next_pid_.fetch_add(1), .start_ticks = 1};
  }
  exec::ProcessStatus poll(const exec::ProcessRef&, const std::filesystem::path&) override {
    return {};  // Running
  }
  util::Status notify(const exec::ProcessRef&, const std::filesystem::path&, int,
                      std::string_view) override {
    return util::Status::ok();
  }
  util::Status kill(const exec::ProcessRef&) override { return util::Status::ok(); }
  util::Result<exec::ProcessRef> find(const std::filesystem::path&) override {
    return util::not_found("the fake executor keeps no pid files");
  }
  int64_t launched() const { return launched_.load(); }
  int64_t gpus() const { return gpus_.load(); }

 private:
  std::atomic<int> next_pid_{100000};
  std::atomic<int64_t> launched_{0};
  std::atomic<int64_t> gpus_{0};
};

// Prints `what` and the error, then exits: a benchmark cannot go on without its fixture.
inline void must(const util::Status& st, std::string_view what) {
  if (st.is_ok()) return;
  fmt::print(stderr, "server_bench: {}: {}\n", what, st.to_string());
  std::exit(1);
}
template <typename T>
T must(util::Result<T> r, std::string_view what) {
  must(r.status(), what);
  return std::move(r).value();
}

// Nearest-rank percentile (p in (0, 1]) of `v`; 0 for an empty sample.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}
inline double median(std::vector<double> v) {
  return percentile(std::move(v), 0.5);
}

inline double elapsed_ms(util::Duration since) {
  return util::to_seconds(util::WallClock::steady_now() - since) * 1e3;
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string dir = (std::filesystem::temp_directory_path() / "ty_server_bench_XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) must(util::unavailable("mkdtemp failed"), "temp dir");
    path_ = dir;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// `count` simulated H100-80GB GPUs of one machine, as a GpuSampler would report them.
inline std::vector<telemetry::GpuDevice> sim_devices(int count) {
  std::vector<telemetry::GpuDevice> out;
  for (int gpu_idx = 0; gpu_idx < count; ++gpu_idx) {
    out.push_back({.index = gpu_idx,
                   .uuid = fmt::format("GPU-sim-{}", gpu_idx),
                   .name = "NVIDIA H100 80GB HBM3",
                   .model = "H100-80GB",
                   .memory = model::gib(80),
                   .simulated = true});
  }
  return out;
}

// `count` simulated nodes node-0001... with `gpus` GPUs of `model` each (H100-80GB: 80 GiB).
inline std::vector<server::LocalNode> sim_nodes(int count, int gpus, const std::string& model) {
  std::vector<server::LocalNode> out;
  for (int node_idx = 0; node_idx < count; ++node_idx) {
    server::LocalNode n{.simulated = true};
    n.node.id = util::NodeId(node_idx + 1);
    n.node.name = fmt::format("node-{:04d}", node_idx + 1);
    n.node.pool = "sim";
    n.node.gpu_model = model;
    n.node.gpu_count = gpus;
    n.node.cpu = model::CpuMilli(int64_t{128} * 1000);
    n.node.memory = model::gib(1024);
    n.node.rack = fmt::format("rack-{:02d}", node_idx / 32);
    n.node.labels[model::kLabelPool] = "sim";
    n.node.labels[model::kLabelGpuProduct] = model;
    for (int gpu_idx = 0; gpu_idx < gpus; ++gpu_idx) {
      n.gpus.push_back({.index = gpu_idx,
                        .uuid = fmt::format("GPU-sim-{:04d}-{}", node_idx + 1, gpu_idx),
                        .name = "NVIDIA H100 80GB HBM3",
                        .model = model,
                        .memory = model::gib(80),
                        .simulated = true});
    }
    out.push_back(std::move(n));
  }
  return out;
}

// A ControlPlane on `dir` with the given nodes and policy (reconcile loop not started).
inline std::unique_ptr<server::ControlPlane> open_plane(const std::filesystem::path& dir,
                                                        std::vector<server::LocalNode> nodes,
                                                        exec::Executor& executor,
                                                        const util::Clock& clock,
                                                        const std::string& policy = "fifo") {
  server::ControlPlaneOptions options{.state_dir = dir};
  options.config.policy.name = policy;
  return must(server::ControlPlane::open(options, std::move(nodes), executor, clock),
              "opening the control plane");
}

// An HttpApi on 127.0.0.1:<any free port>, served on its own thread until destruction.
class ServedApi {
 public:
  explicit ServedApi(server::ControlPlane& plane) : api_(plane, {.host = "127.0.0.1", .port = 0}) {
    must(api_.bind(), "binding the HTTP API");
    thread_ = std::thread([this] { api_.serve(); });
    // A reply proves that the API answers before anything is timed.
    httplib::Client probe("127.0.0.1", api_.bound_port());
    for (int attempt = 0; attempt < 200; ++attempt) {
      auto res = probe.Get("/healthz");
      if (res && res->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    must(util::unavailable("no reply to /healthz"), "starting the HTTP API");
  }
  ServedApi(const ServedApi&) = delete;
  ServedApi& operator=(const ServedApi&) = delete;
  ~ServedApi() {
    api_.stop();
    thread_.join();
  }
  int port() const { return api_.bound_port(); }

 private:
  server::HttpApi api_;
  std::thread thread_;
};

// A valid job manifest (JSON) asking for `gpus` GPUs of any model.
inline std::string manifest(const std::string& name, const std::string& team, int gpus) {
  return fmt::format(
      R"({{"apiVersion":"trainyard.dev/v1","kind":"Job","metadata":{{"name":"{}"}},)"
      R"("spec":{{"team":"{}","template":{{"command":["python","train.py","--epochs","10"],)"
      R"("resources":{{"limits":{{"nvidia.com/gpu":{}}}}}}}}}}})",
      name, team, gpus);
}

inline constexpr int kTeams = 20;

// `n` jobs in batches of 1,000 per transaction; every 100th stays Pending, the rest Succeeded
// with the five events and the attempt a real run leaves.
inline void fill_store(const std::filesystem::path& db, int n) {
  auto store = must(store::Store::open(db), "opening the store");
  std::vector<std::string> manifests;
  for (int team = 0; team < kTeams; ++team) {
    auto m = must(model::parse_job_manifest(
                      manifest("train", fmt::format("team-{:02d}", team), 1 << (team % 4)), "b"),
                  "parsing a manifest");
    manifests.push_back(model::job_manifest_to_json(m));
  }
  using model::JobState;
  auto event = [](store::Store& s, util::JobId id, util::Time at, std::string from, JobState to,
                  const char* type) {
    return s.append_event({.job = id,
                           .at = at,
                           .type = type,
                           .from_state = std::move(from),
                           .to_state = std::string(job_state_name(to)),
                           .reason = "bench"});
  };
  for (int first = 0; first < n; first += 1000) {
    must(store->transaction([&]() -> util::Status {
      for (int i = first; i < std::min(n, first + 1000); ++i) {
        const bool pending = i % 100 == 99;
        const util::Time t = util::from_seconds(1.7e9 + i);
        store::JobRecord rec{.name = "train",
                             .team = fmt::format("team-{:02d}", i % kTeams),
                             .state = pending ? JobState::Pending : JobState::Succeeded,
                             .manifest_json = manifests[i % kTeams],
                             .submitted = t,
                             .updated = t,
                             .queued_since = t,
                             .reason = "bench"};
        if (!pending) {
          rec.started = t + util::seconds(10);
          rec.finished = rec.updated = t + util::seconds(3600);
        }
        TY_ASSIGN_OR_RETURN(rec.id, store->insert_job(rec));
        TY_RETURN_IF_ERROR(event(*store, rec.id, t, "", JobState::Pending, "Submitted").status());
        if (pending) continue;
        const JobState path[] = {JobState::Pending, JobState::Admitted, JobState::Placed,
                                 JobState::Running, JobState::Succeeded};
        for (int step = 1; step < 5; ++step) {
          TY_RETURN_IF_ERROR(event(*store, rec.id, rec.started,
                                   std::string(job_state_name(path[step - 1])), path[step],
                                   "Transition")
                                 .status());
        }
        TY_RETURN_IF_ERROR(store->put_attempt(
            {.job = rec.id,
             .started = rec.started,
             .ended = rec.finished,
             .placement_json = R"([{"worker":0,"node":"node-0001","gpu":0,"milli":1000}])",
             .processes_json = R"([{"rank":0,"pid":4242,"start_ticks":1,"run_dir":"/x"}])",
             .outcome = "succeeded"}));
      }
      return util::Status::ok();
    }),
         "filling the store");
  }
}

// plan() alone on the snapshot the server builds for cycle 1 (every job pending), then on the
// one it builds for cycle 2 (cycle 1's starts running). Returns {ms, ms, starts of the first}.
struct PlanOnly {
  double first_ms, later_ms;
  size_t starts;
};
inline PlanOnly plan_only(const std::vector<server::LocalNode>& nodes,
                          const std::vector<int>& gpus_of_id, const std::string& policy) {
  util::WallClock clock;
  sched::Snapshot snap;
  snap.now = clock.now();
  for (const auto& n : nodes) sched::add_node(snap, n.node);
  sched::add_team(snap, model::Team{.name = "default"});
  std::vector<model::JobSpec> specs(9);
  for (int g : {1, 2, 4, 8}) {
    specs[g] = must(model::parse_job_manifest(manifest(fmt::format("r{}", g), "default", g), "b"),
                    "parsing")
                   .spec;
  }
  for (size_t id = 1; id < gpus_of_id.size(); ++id) {
    auto sj = sched::make_pending_job(snap, util::JobId(static_cast<int64_t>(id)),
                                      specs[gpus_of_id[id]], snap.now);
    sj.queued_since = snap.now;
    snap.jobs.push_back(std::move(sj));
  }
  const sched::PolicyConfig cfg{.name = policy};
  util::Duration t0 = util::WallClock::steady_now();
  const sched::Plan first = sched::plan(snap, cfg, 1);
  PlanOnly out{.first_ms = elapsed_ms(t0), .later_ms = 0, .starts = first.starts.size()};
  for (const auto& s : first.starts) {
    auto& sj = snap.jobs[s.job.value() - 1];
    sj.phase = sched::JobPhase::Running;
    sj.started = snap.now;
    sj.placement = s.placement;
  }
  t0 = util::WallClock::steady_now();
  const sched::Plan second = sched::plan(snap, cfg, 2);
  out.later_ms = elapsed_ms(t0);
  return out;
}

}  // namespace trainyard::bench
