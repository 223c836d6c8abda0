// Fixtures for bench/server_bench.cc: an executor that starts nothing, synthetic nodes, a
// temporary state directory, an HttpApi served on a thread, and order statistics.
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
    // stop() is only safe once the listen loop runs; a reply proves that it does.
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

// Nearest-rank percentile (p in (0, 1]) of `v`; 0 for an empty sample.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}
inline double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

inline double elapsed_ms(util::Duration since) {
  return util::to_seconds(util::WallClock::steady_now() - since) * 1e3;
}

}  // namespace trainyard::bench
