// The doctor's multi-GPU rules: uneven work across the job's GPUs, and the hint that a balanced,
// well-fed job with low utilization everywhere waits on communication.
#include <cmath>

#include <fmt/format.h>

#include "telemetry/doctor_internal.h"

namespace trainyard::telemetry::doctor_internal {
namespace {

void imbalance_rule(Context& ctx) {
  const auto devices = busy_devices(ctx);
  const DeviceSeries* worst_a = nullptr;
  const DeviceSeries* worst_b = nullptr;
  double worst = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t k = i + 1; k < devices.size(); ++k) {
      const DeviceSeries& a = *devices[i];
      const DeviceSeries& b = *devices[k];
      if (std::fabs(a.util_mean - b.util_mean) < ctx.t.imbalance_min_mean_gap) continue;
      const double dist = js_distance(a.util, b.util, ctx.t.imbalance_bins);
      if (dist > ctx.t.imbalance_js_distance && dist > worst) {
        worst = dist;
        worst_a = &a;
        worst_b = &b;
      }
    }
  }
  if (worst_a == nullptr) return;
  if (worst_a->util_mean < worst_b->util_mean) std::swap(worst_a, worst_b);
  std::vector<std::string> evidence = {
      fmt::format("{} util mean {:.1f}% vs {} {:.1f}%: Jensen-Shannon distance {:.2f} of their "
                  "utilization histograms (threshold {:.2f})",
                  worst_a->label, worst_a->util_mean, worst_b->label, worst_b->util_mean, worst,
                  ctx.t.imbalance_js_distance)};
  for (const DeviceSeries* d : devices) {
    evidence.push_back(
        fmt::format("{}: util mean {:.1f}%, p95 {:.1f}%", d->label, d->util_mean, d->util_p95));
  }
  ctx.findings.push_back(Finding{
      .rule = "gpu-imbalance",
      .severity = "warning",
      .summary = "the job's GPUs do unequal work: the busiest ones set the pace",
      .evidence = std::move(evidence),
      .action = "give every rank an equal share: DistributedSampler with drop_last=True, batches "
                "bucketed by sequence length, no extra work on rank 0 inside the step (logging, "
                "evaluation, checkpoint writes); with model or pipeline parallelism, rebalance "
                "the layers across stages",
  });
}

void communication_hint(Context& ctx) {
  if (ctx.comm_measured) return;  // measured from the step metrics instead (or fine)
  const auto devices = busy_devices(ctx);
  if (devices.size() < 2) return;
  for (const char* rule : {"input-bound", "under-filled", "gpu-imbalance", "idle-gpu"}) {
    if (ctx.has(rule)) return;
  }
  double util = 0, memory = 0;
  for (const DeviceSeries* d : devices) {
    if (d->util_mean >= ctx.t.comm_hint_util_mean) return;
    util += d->util_mean;
    memory += d->memory_mean_share;
  }
  const auto n = static_cast<double>(devices.size());
  std::vector<std::string> evidence = {
      fmt::format("{} GPUs, each below {:.0f}% util (mean {:.1f}%), memory {} in use",
                  devices.size(), ctx.t.comm_hint_util_mean, util / n, percent(memory / n))};
  if (ctx.stats.data_wait_share) {
    evidence.push_back(
        fmt::format("data wait only {} of step time", percent(*ctx.stats.data_wait_share)));
  }
  ctx.findings.push_back(Finding{
      .rule = "communication-bound",
      .severity = "info",
      .summary = "every GPU is under-used while none lacks data or work: likely waiting on "
                 "gradient communication",
      .evidence = std::move(evidence),
      .action = "profile a few steps with torch.profiler and run `trainyard doctor --trace "
                "trace.json` to measure communication and its overlap; overlap all-reduce with "
                "backward (DDP bucket_cap_mb, no find_unused_parameters), skip syncs while "
                "accumulating gradients (no_sync()), keep a node's ranks on NVLink-connected GPUs",
  });
}

}  // namespace

void run_balance_rules(Context& ctx) {
  imbalance_rule(ctx);
  communication_hint(ctx);
}

}  // namespace trainyard::telemetry::doctor_internal
