// The doctor's rules over step metrics: data wait (input-bound), fp32 on tensor-core GPUs, and
// step-time outliers. Thresholds and their sources are in DoctorThresholds.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "telemetry/doctor_internal.h"

namespace trainyard::telemetry::doctor_internal {
namespace {

bool is_fp32(std::string dtype) {
  std::transform(dtype.begin(), dtype.end(), dtype.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return dtype == "fp32" || dtype == "float32" || dtype == "torch.float32" || dtype == "float" ||
         dtype == "f32";
}

void data_wait_rule(Context& ctx) {
  double wait = 0, total = 0;
  int64_t lines = 0;
  for (const auto& s : ctx.job.steps) {
    if (!s.data_wait_s || !s.step_time_s) continue;
    wait += *s.data_wait_s;
    total += *s.step_time_s;
    ++lines;
  }
  if (lines < ctx.t.min_steps || total <= 0) return;
  const double share = wait / total;
  ctx.stats.data_wait_share = share;
  if (share <= ctx.t.data_wait_share) {
    ctx.input_measured_ok = true;
    return;
  }
  const double n = static_cast<double>(lines);
  ctx.findings.push_back(Finding{
      .rule = "input-bound",
      .severity = "warning",
      .summary =
          fmt::format("the training loop waits for input data {} of each step", percent(share)),
      .evidence = {fmt::format("data wait {} of step time (mean {:.4f} s of {:.4f} s over {} "
                               "metric lines; threshold {})",
                               percent(share), wait / n, total / n, lines,
                               percent(ctx.t.data_wait_share))},
      .action = "feed the GPU faster: DataLoader(num_workers=<CPU cores per GPU>, pin_memory=True, "
                "prefetch_factor=4, persistent_workers=True); store the data in a binary shard "
                "format (WebDataset tar shards, Arrow/Parquet, a numpy memmap) instead of many "
                "small files, and move decoding/augmentation to the GPU (DALI) if the CPU is "
                "saturated",
  });
}

void fp32_rule(Context& ctx) {
  const StepMetrics* last_with_dtype = nullptr;
  int64_t fp32_lines = 0;
  for (const auto& s : ctx.job.steps) {
    if (s.dtype.empty()) continue;
    last_with_dtype = &s;
    if (is_fp32(s.dtype)) ++fp32_lines;
  }
  if (last_with_dtype == nullptr) return;
  ctx.stats.dtype = last_with_dtype->dtype;
  if (ctx.stats.steps < ctx.t.min_steps || !is_fp32(last_with_dtype->dtype)) return;
  const TensorCoreInfo tc = tensor_core_info(ctx.model);
  if (!tc.tensor_cores) return;
  // trainyard.tune chose fp32 with TF32 matmuls because it measured them faster than bf16 at
  // this micro-batch (tiny steps, seen on an H100): those matmuls run on the tensor cores, and
  // the doctor does not contradict a measured choice. TF32 exists where bf16 does (Ampere on).
  const StepMetrics::Tune* tuned = nullptr;
  for (const auto& s : ctx.job.steps) {
    if (s.tune) tuned = &*s.tune;
  }
  if (tuned != nullptr && tuned->tf32 && tc.bf16) return;
  const model::Accelerator* acc = model::find_accelerator(ctx.model);
  std::vector<std::string> evidence = {
      fmt::format("dtype \"{}\" on {} of {} metric lines (last: \"{}\")", last_with_dtype->dtype,
                  fp32_lines, ctx.stats.steps, last_with_dtype->dtype)};
  if (acc != nullptr) {
    evidence.push_back(
        fmt::format("{} has tensor cores: {:.0f} TFLOPS dense {} vs a small "
                    "fraction of that in plain fp32",
                    acc->name, acc->fp16_tflops, tc.bf16 ? "bf16/fp16" : "fp16"));
  }
  ctx.findings.push_back(Finding{
      .rule = "fp32-on-tensor-cores",
      .severity = "warning",
      .summary =
          fmt::format("training runs in fp32 on {}, whose tensor cores it does not use", ctx.model),
      .evidence = std::move(evidence),
      .action = tc.bf16 ? "train under torch.autocast(\"cuda\", dtype=torch.bfloat16) (no loss "
                          "scaling needed), and let the remaining fp32 matmuls use TF32: "
                          "torch.set_float32_matmul_precision(\"high\")"
                        : "train under torch.autocast(\"cuda\", dtype=torch.float16) with "
                          "torch.cuda.amp.GradScaler (this GPU has fp16 tensor cores but no bf16 "
                          "or TF32)",
  });
}

void step_outlier_rule(Context& ctx) {
  std::vector<double> times;
  std::vector<int64_t> step_numbers;
  int skipped = 0;
  for (const auto& s : ctx.job.steps) {
    if (!s.step_time_s) continue;
    if (skipped < ctx.t.outlier_warmup_steps) {
      ++skipped;
      continue;
    }
    times.push_back(*s.step_time_s);
    step_numbers.push_back(s.step.value_or(-1));
  }
  if (static_cast<int64_t>(times.size()) <= ctx.t.outlier_min_steps) return;
  const double m = mean(times);
  double var = 0;
  for (double x : times) var += (x - m) * (x - m);
  const double sd = std::sqrt(var / static_cast<double>(times.size()));
  const double limit = m + ctx.t.outlier_stddevs * sd;
  std::vector<size_t> outliers;
  for (size_t i = 0; i < times.size(); ++i) {
    if (times[i] > limit) outliers.push_back(i);
  }
  if (static_cast<int64_t>(outliers.size()) <= ctx.t.outlier_max_count) return;
  const size_t worst = *std::max_element(outliers.begin(), outliers.end(),
                                         [&](size_t a, size_t b) { return times[a] < times[b]; });
  std::string which;
  for (size_t i = 0; i < outliers.size() && i < 8; ++i) {
    which += (i ? ", " : "") + std::to_string(step_numbers[outliers[i]]);
  }
  if (outliers.size() > 8) which += ", ...";
  ctx.findings.push_back(Finding{
      .rule = "step-outliers",
      .severity = "info",
      .summary = fmt::format("{} steps took far longer than the rest", outliers.size()),
      .evidence = {fmt::format(
                       "{} of {} steps over {:.4f} s (mean {:.4f} s + {:.0f} x sd {:.4f} s; "
                       "more than {} is a finding)",
                       outliers.size(), times.size(), limit, m, ctx.t.outlier_stddevs, sd,
                       ctx.t.outlier_max_count),
                   fmt::format("slowest {:.4f} s at step {}", times[worst], step_numbers[worst]),
                   fmt::format("outlier steps: {}", which)},
      .action = "look at what runs on those steps: checkpoint saves, evaluation, logging, Python "
                "garbage collection (gc.freeze() after start-up), new data shards; move periodic "
                "work out of the step or make it asynchronous, and check for other jobs on the "
                "node",
  });
}

}  // namespace

TensorCoreInfo tensor_core_info(std::string_view model_name) {
  // Volta (V100) and Turing (T4, RTX 2080 Ti) have fp16 tensor cores; Ampere and later add bf16
  // and TF32. Pascal (P100) and Kepler (K80) have none. The catalog does not carry this.
  struct Row {
    std::string_view model;
    TensorCoreInfo info;
  };
  static constexpr std::array<Row, 14> kRows{{
      {"H100-80GB", {true, true}},
      {"H200-141GB", {true, true}},
      {"A100-80GB", {true, true}},
      {"A100-40GB", {true, true}},
      {"L40S", {true, true}},
      {"L4", {true, true}},
      {"A10G", {true, true}},
      {"A10", {true, true}},
      {"T4", {true, false}},
      {"V100-16GB", {true, false}},
      {"V100-32GB", {true, false}},
      {"RTX-2080TI", {true, false}},
      {"P100", {false, false}},
      {"K80", {false, false}},
  }};
  const std::string canonical = model::canonical_accelerator_name(model_name);
  for (const auto& r : kRows) {
    if (r.model == canonical) return r.info;
  }
  return {};
}

namespace {

// Communication measured by trainyard.distributed: the all-reduce time backward did not hide.
void comm_wait_rule(Context& ctx) {
  double wait = 0, total = 0, bytes = 0;
  int64_t lines = 0, byte_lines = 0;
  for (const auto& s : ctx.job.steps) {
    if (s.comm_bytes) {
      bytes += static_cast<double>(*s.comm_bytes);
      ++byte_lines;
    }
    if (!s.comm_wait_s || !s.step_time_s) continue;
    wait += *s.comm_wait_s;
    total += *s.step_time_s;
    ++lines;
  }
  if (byte_lines > 0) ctx.stats.comm_bytes_per_step = bytes / static_cast<double>(byte_lines);
  if (lines < ctx.t.min_steps || total <= 0) return;
  const double share = wait / total;
  ctx.stats.comm_wait_share = share;
  ctx.comm_measured = true;
  if (share <= ctx.t.comm_wait_share) return;
  std::vector<std::string> evidence = {
      fmt::format("communication not hidden by backward: {} of step time (mean {:.4f} s of "
                  "{:.4f} s over {} metric lines; threshold {})",
                  percent(share), wait / static_cast<double>(lines),
                  total / static_cast<double>(lines), lines, percent(ctx.t.comm_wait_share))};
  if (ctx.stats.comm_bytes_per_step) {
    evidence.push_back(
        fmt::format("{:.1f} MB all-reduced per step", *ctx.stats.comm_bytes_per_step / 1e6));
  }
  ctx.findings.push_back(Finding{
      .rule = "communication-bound",
      .severity = "warning",
      .summary =
          fmt::format("ranks wait on gradient communication {} of each step", percent(share)),
      .evidence = std::move(evidence),
      .action = "send fewer bytes: compress gradients (fp16 or bf16 halve them at no measured "
                "loss cost; PowerSGD sends 45-230x fewer, but at rank 2 its loss trailed "
                "uncompressed training by 6-17% in trainyard's benchmarks: raise the rank until "
                "the loss follows), "
                "accumulate more micro-batches per all-reduce (no_sync()), or keep the job's "
                "ranks on fewer, better-connected nodes",
  });
}

// The newest choice trainyard.tune reported, so show and the doctor can say what it did.
void tune_stats(Context& ctx) {
  for (auto it = ctx.job.steps.rbegin(); it != ctx.job.steps.rend(); ++it) {
    if (it->tune) {
      ctx.stats.tune = *it->tune;
      return;
    }
  }
}

}  // namespace

void run_step_rules(Context& ctx) {
  ctx.stats.steps = static_cast<int64_t>(ctx.job.steps.size());
  ctx.stats.enough_steps = ctx.stats.steps >= ctx.t.min_steps;
  std::vector<double> times;
  for (const auto& s : ctx.job.steps) {
    if (s.step_time_s) times.push_back(*s.step_time_s);
  }
  if (!times.empty()) ctx.stats.step_time_mean_s = mean(times);
  data_wait_rule(ctx);
  fp32_rule(ctx);
  step_outlier_rule(ctx);
  comm_wait_rule(ctx);
  tune_stats(ctx);
}

}  // namespace trainyard::telemetry::doctor_internal
