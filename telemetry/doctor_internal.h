// Shared between the doctor's rule files (doctor_gpu_rules.cc, doctor_step_rules.cc) and its
// driver (doctor.cc): one job's samples split per device with the statistics the rules read.
// Not an interface: only telemetry/doctor*.cc include it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "telemetry/doctor.h"

namespace trainyard::telemetry::doctor_internal {

// One device's history, as the rules see it.
struct DeviceSeries {
  std::string key;    // uuid, else "index <n>"
  std::string label;  // "GPU 0", "GPU 0 (MIG 1g.10gb)"
  std::string model;
  std::string mig_profile;
  bool is_mig = false;
  int64_t samples = 0;
  util::Time first{};  // the device's first and last sample
  util::Time last{};
  std::vector<double> util;          // % per sample that has one (GPU util, else GPM SM active)
  std::vector<double> memory_share;  // used / total per sample that has both, time ordered
  std::vector<double> tensor;        // % tensor-core activity per sample that has one (GPM)
  uint64_t memory_total = 0;
  uint64_t memory_peak = 0;
  int64_t throttle_known = 0;  // samples that report throttle reasons
  int64_t throttle_hits = 0;   // ... with a thermal or power bit set
  double max_temperature_c = 0;
  double slowdown_temperature_c = 0;  // 0 = not reported

  // Derived by summarize().
  bool enough = false;  // enough history for the GPU-sample rules
  bool has_util = false;
  double util_mean = 0, util_p5 = 0, util_p95 = 0;
  double idle_share = 0;  // share of util samples below DoctorThresholds::idle_util
  bool idle = false;
  double memory_peak_share = 0, memory_mean_share = 0;
  double tensor_mean = 0;  // of `tensor`, when it is not empty
};

struct Context {
  const JobTelemetry& job;
  const DoctorThresholds& t;
  std::string model;  // canonical accelerator model of the job
  std::vector<DeviceSeries> devices;
  DoctorStats stats;
  // From the step metrics: whether they show the input pipeline to be fine (data wait measured and
  // under the threshold), so the GPU-sample guess at input-boundness is not made.
  bool input_measured_ok = false;
  // Whether trainyard.distributed measured the communication wait (then the utilization-based
  // communication hint is not needed).
  bool comm_measured = false;
  std::vector<Finding> findings;

  bool has(std::string_view rule) const;
  Finding* find(std::string_view rule);
};

// Linear-interpolation quantile (numpy's default) of unsorted values; q in [0, 1].
double quantile(std::vector<double> values, double q);
double mean(const std::vector<double>& values);
// "42.0%" for a share of 1.
std::string percent(double share);
// "12.3 GiB".
std::string gib(uint64_t bytes);
// "4.5 min" / "2.0 h" / "30 s".
std::string duration(util::Duration d);

// Jensen-Shannon distance (natural log, square root of the divergence, as scipy) of the
// histograms of two sets of percentages over `bins` equal bins of 0..100.
double js_distance(const std::vector<double>& a, const std::vector<double>& b, int bins);

// Devices with enough history and a utilization reading that are not idle.
std::vector<const DeviceSeries*> busy_devices(const Context& ctx);

std::vector<DeviceSeries> split_devices(const JobTelemetry& job, const DoctorThresholds& t);

// Each appends its findings to ctx.findings. Step rules run first (they decide input_measured_ok).
void run_step_rules(Context& ctx);     // doctor_step_rules.cc
void run_gpu_rules(Context& ctx);      // doctor_gpu_rules.cc; calls the two below
void run_health_rules(Context& ctx);   // doctor_health_rules.cc: leak, near OOM, throttling
void run_balance_rules(Context& ctx);  // doctor_balance_rules.cc: imbalance, communication
void run_tensor_rules(Context& ctx);   // doctor_tensor_rules.cc: tensor cores left idle

// Tensor-core facts for catalogued models the catalog does not carry.
struct TensorCoreInfo {
  bool tensor_cores = false;
  bool bf16 = false;  // Ampere and later; V100/T4 have fp16 tensor cores only
};
TensorCoreInfo tensor_core_info(std::string_view model);

}  // namespace trainyard::telemetry::doctor_internal
