// A ControlPlane over simulated GPUs, a virtual clock and the FakeExecutor, in a fresh state
// directory per test: the fixture the control plane's unit tests share. open() again is a
// restart on the same store.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fake_executor.h"
#include "server/control_plane.h"

namespace trainyard::server {

// A minimal job spec asking for `gpus` GPUs per worker; `extra_spec` lines go under spec:.
inline std::string job_yaml(const std::string& name, int gpus = 1,
                            const std::string& extra_spec = "") {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n" +
         extra_spec +
         "  template:\n    command: [train]\n    resources: {limits: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}}\n";
}

class PlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        std::filesystem::temp_directory_path() / ("ty-plane-" + std::to_string(::getpid()) + "-" +
                                                  info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(dir_);
    open();
  }
  void TearDown() override {
    plane_.reset();
    std::filesystem::remove_all(dir_);
  }
  // (Re)starts the control plane on this test's state dir with `gpus` simulated H100s.
  void open(ServerConfig config = {}, int gpus = 4) {
    plane_.reset();
    std::vector<telemetry::GpuDevice> devices;
    for (int i = 0; i < gpus; ++i)
      devices.push_back({.index = i,
                         .uuid = "GPU-" + std::to_string(i),
                         .model = "H100-80GB",
                         .simulated = true});
    auto p = ControlPlane::open({.state_dir = dir_, .config = config},
                                ControlPlane::nodes_from_devices(devices), exec_, clock_);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plane_ = std::move(*p);
  }
  // Submits as admin; the job's id, or -1 and a test failure when refused.
  int64_t submit(const std::string& yaml) {
    auto r = plane_->submit(yaml, "job.yaml", admin_);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? (*r)["id"].get<int64_t>() : -1;
  }
  nlohmann::json job(int64_t id) { return *plane_->get_job(util::JobId(id), admin_); }
  // Moves the clock on and runs one reconcile cycle.
  void cycle(double advance_seconds = 0.1) {
    clock_.advance_to(clock_.now() + util::seconds_f(advance_seconds));
    ASSERT_TRUE(plane_->reconcile_once().is_ok());
  }

  std::filesystem::path dir_;
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000)};
  FakeExecutor exec_;
  std::unique_ptr<ControlPlane> plane_;
  Principal admin_{.admin = true, .name = "test"};
};

}  // namespace trainyard::server
