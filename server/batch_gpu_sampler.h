// The GPUs of a batch system's nodes as the telemetry recorder's sampler: the wrappers of the
// workers running there write their GPUs' readings to the shared directory
// (exec::kGpuSamplesFile), and each round this reads the newest file of every running worker
// and names each reading after the scheduler's slot it fills ("slurm-n1-gpu0"), so the recorder
// attributes, keeps and exports it as it does for this machine's GPUs. Thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "telemetry/gpu_sampler.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

struct BatchWorkerGpus {
  std::filesystem::path run_dir;
  std::vector<std::string> slots;  // the device names of its GPUs, in CUDA_VISIBLE_DEVICES order
  std::vector<int> slot_index;     // their GPU indices on the node, in the same order
  std::string node;
};

class BatchGpuSampler final : public telemetry::GpuSampler {
 public:
  // Readings older than `stale_after` are left out (a worker that ended or hangs).
  explicit BatchGpuSampler(std::chrono::milliseconds stale_after) : stale_after_(stale_after) {}
  // Who runs where now; set by the control plane after every reconcile cycle.
  void set_workers(std::vector<BatchWorkerGpus> workers);

  util::Result<std::vector<telemetry::GpuDevice>> devices() override {
    return std::vector<telemetry::GpuDevice>{};
  }
  util::Result<std::vector<telemetry::GpuSample>> sample(util::Time now) override;
  std::string_view kind() const override { return "batch"; }

 private:
  std::chrono::milliseconds stale_after_;
  util::Mutex mu_;
  std::vector<BatchWorkerGpus> workers_ TY_GUARDED_BY(mu_);
};

}  // namespace trainyard::server
