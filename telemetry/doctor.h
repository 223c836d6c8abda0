// The job doctor: turns a job's GPU samples and step metrics into findings ("input-bound",
// "memory-leak", ...), each with the numbers that show it and a concrete next step. Pure: no I/O
// except read_step_metrics_file(), no clock. Every threshold is a field of DoctorThresholds whose
// comment names its source; docs/doctor.md lists them. No rule fires on too little data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/clock.h"

#include "telemetry/gpu_sample.h"
#include "util/status.h"

namespace trainyard::telemetry {

// One line of a job's metrics file (docs/job-contract.md, "Metrics").
struct StepMetrics {
  util::Time time{};  // the line's `time`, to the millisecond
  std::optional<int64_t> step;
  std::optional<int64_t> samples;
  std::optional<double> loss;  // absent or null (not finite) in the file
  std::optional<double> data_wait_s;
  std::optional<double> step_time_s;
  std::string dtype;                   // "" when not reported
  std::optional<int64_t> total_steps;  // the steps the job means to run, when it says
  // trainyard.distributed: communication that did not overlap compute, and bytes all-reduced.
  std::optional<double> comm_wait_s;
  std::optional<int64_t> comm_bytes;
  // trainyard.tune's choice, on the line it reported it (tune_micro_batch present).
  struct Tune {
    int64_t micro_batch = 0;
    std::optional<int64_t> accum_steps, world_size, global_batch, target_global_batch,
        largest_micro_batch;
    std::optional<double> speedup, step_time_s, naive_step_time_s;
    bool channels_last = false;
    bool tf32 = false;
  };
  std::optional<Tune> tune;
};

struct JobTelemetry {
  std::string job_id;
  std::string accelerator_model;  // canonical ("H100-80GB"); "" = take it from the samples
  int gpus = 0;
  bool mig = false;
  std::vector<GpuSample> samples;  // all the job's devices over its life, time ordered
  std::vector<StepMetrics> steps;
};

struct Finding {
  std::string rule;      // stable id, e.g. "input-bound"
  std::string severity;  // "info" or "warning"
  std::string summary;
  std::vector<std::string> evidence;  // numbers with units
  std::string action;                 // the concrete next step
  std::string sdk;  // the trainyard SDK option that does it, as a line of Python; "" = none
};

struct DoctorThresholds {
  // Minimum evidence (ours): GPU-sample rules need this much history per device, step rules this
  // many metric lines; below that the doctor says "not enough data yet" instead of guessing.
  util::Duration min_duration = util::seconds(5 * 60);
  int min_samples_per_gpu = 30;
  int min_steps = 50;

  // input-bound. kineto tb_plugin (profiler/data.py): DataLoader time > 5% of a step.
  double data_wait_share = 0.05;
  // input-bound from GPU samples alone: memory held (the model is loaded) while the GPU waits.
  // 50% is ours; p95 < 70 and p5 < 10 are SageMaker LowGPUUtilization's threshold_p95/p5.
  double input_bound_memory_share = 0.50;
  double low_util_p95 = 70;
  double low_util_mean = 40;  // ours: mean < 40% also counts as low
  double fluctuating_util_p5 = 10;

  // under-filled: tb_plugin "GPU utilization < 50%: increase batch size"; memory < 30% is ours.
  double underfilled_memory_share = 0.30;
  double underfilled_util_mean = 50;

  // memory-leak. SageMaker GPUMemoryIncrease: window 10, increase 5 (% of capacity, absolute).
  // The number of rising windows ("repeatedly") is ours; the first window (start-up
  // allocations) is skipped, and memory must still grow in the second half of the series.
  // Ours too: a slow climb of more than leak_min_rises x 5% that never drops by more than 1%
  // between windows also counts (a leak too slow for any one window to rise by 5%).
  int leak_window = 10;
  double leak_increase_share = 0.05;
  int leak_min_rises = 3;
  double leak_max_drop_share = 0.01;

  // near-oom. tb_plugin: peak memory > 90% of totalGlobalMem.
  double near_oom_share = 0.90;

  // idle-gpu (ours, after KempnerPulse's "idle: all < 5%"): util < 5% in 80% of the samples.
  double idle_util = 5;
  double idle_sample_share = 0.80;

  // gpu-imbalance. SageMaker LoadBalancing: Jensen-Shannon distance of per-GPU utilization
  // histograms > 0.2. Ours: 10 bins of 10% (SageMaker uses 2% bins over 1,000 points, too fine for
  // a few hundred samples) and a mean gap of at least 10 points, so sampling noise never fires.
  double imbalance_js_distance = 0.2;
  int imbalance_bins = 10;
  double imbalance_min_mean_gap = 10;

  // communication-bound hint (ours): a multi-GPU job, balanced, fed, memory in use, mean util
  // below tb_plugin's 50%.
  double comm_hint_util_mean = 50;
  // communication-bound, measured: trainyard.distributed's comm_wait_s (all-reduce time that
  // backward did not hide) over 20% of step time, over >= min_steps lines. HTA reports the same
  // quantity (communication not overlapped with compute) without a threshold; 20% is ours.
  double comm_wait_share = 0.20;

  // tensor-cores-idle (ours): on a GPU with tensor cores that reports their activity (GPM), a
  // busy device (util mean >= 40%, tb_plugin's "low utilization" line is 50%) whose tensor-core
  // activity averages below 1% computes without them. Healthy bf16 training keeps them 20-60%
  // busy, and tb_plugin flags a run whose kernels use no tensor cores at all.
  double tensor_idle_percent = 1;
  double tensor_busy_util_mean = 40;

  // thermal-throttling (ours): kThrottleThermalOrPower bits set in > 10% of the samples.
  double throttle_sample_share = 0.10;

  // right-size (ours): util p95 below 50% and peak memory x 1.25 fits a smaller MIG profile or GPU.
  double right_size_util_p95 = 50;
  double right_size_headroom = 1.25;

  // step-outliers. SageMaker StepOutlier: step time > mean + 3 sigma, more than 10 such steps,
  // evaluated past 100 steps. Skipping the first 10 steps (compilation, autotuning) is ours.
  double outlier_stddevs = 3;
  int outlier_max_count = 10;
  int outlier_min_steps = 100;
  int outlier_warmup_steps = 10;
};

// The numbers the rules looked at, for people and for the API.
struct DoctorStats {
  int devices = 0;
  int64_t samples = 0;
  double duration_s = 0;  // first to last sample
  int64_t steps = 0;      // metric lines
  bool enough_samples = false;
  bool enough_steps = false;
  std::string accelerator_model;
  std::optional<double> util_mean, util_p5, util_p95;  // % over every device's samples
  std::optional<double> memory_peak_share;             // of capacity, worst device
  std::optional<uint64_t> memory_peak_bytes;
  std::optional<double> data_wait_share;  // sum(data_wait_s) / sum(step_time_s)
  std::optional<double> step_time_mean_s;
  std::string dtype;                          // last reported
  std::optional<double> comm_wait_share;      // sum(comm_wait_s) / sum(step_time_s)
  std::optional<double> comm_bytes_per_step;  // mean of comm_bytes
  std::optional<StepMetrics::Tune> tune;      // the newest choice trainyard.tune reported
};

struct Diagnosis {
  std::string job_id;
  std::vector<Finding> findings;  // warnings first, then info
  std::string verdict;            // one line; "healthy" when there are no findings
  DoctorStats stats;
};

Diagnosis diagnose(const JobTelemetry& job, const DoctorThresholds& thresholds = {});

// The SDK option that fixes a rule's finding, as one line of Python (docs/training.md); "" when
// the SDK has none (a node problem, a leak in the user's code).
std::string_view sdk_fix(std::string_view rule);

nlohmann::json to_json(const Finding& finding);
nlohmann::json to_json(const StepMetrics::Tune& tune);
nlohmann::json to_json(const Diagnosis& diagnosis);

// One metrics line. Errors name the field and what it must be.
util::Result<StepMetrics> parse_step_metrics_line(std::string_view line);
// A whole metrics file's text. Blank lines are skipped, and so is a last line without a newline
// that does not parse (a writer caught mid-append); any other bad line is an error naming
// `source`:line.
util::Result<std::vector<StepMetrics>> parse_step_metrics_text(std::string_view text,
                                                               std::string_view source);
util::Result<std::vector<StepMetrics>> read_step_metrics_file(const std::string& path);

}  // namespace trainyard::telemetry
