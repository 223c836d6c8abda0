// The doctor's rules over GPU samples. Each looks only at devices with enough history
// (DeviceSeries::enough); idle devices are reported once, by idle-gpu, and left out of the
// utilization rules so one idle GPU does not also read as "under-filled" or "input-bound".
#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "telemetry/doctor_internal.h"

namespace trainyard::telemetry::doctor_internal {
namespace {

std::string util_text(const DeviceSeries& d) {
  return fmt::format("util mean {:.1f}%, p5 {:.1f}%, p95 {:.1f}% over {} samples ({})", d.util_mean,
                     d.util_p5, d.util_p95, d.util.size(), duration(d.last - d.first));
}

void idle_rule(Context& ctx) {
  std::vector<std::string> evidence;
  int enough = 0;
  for (const auto& d : ctx.devices) {
    if (d.enough && d.has_util) ++enough;
    if (!d.idle) continue;
    evidence.push_back(
        fmt::format("{}: util below {:.0f}% in {} of {} samples over {} (mean {:.1f}%)", d.label,
                    ctx.t.idle_util, percent(d.idle_share), d.util.size(),
                    duration(d.last - d.first), d.util_mean));
  }
  if (evidence.empty()) return;
  const bool all = static_cast<int>(evidence.size()) == enough;
  ctx.findings.push_back(Finding{
      .rule = "idle-gpu",
      .severity = "warning",
      .summary =
          all ? "the job holds its GPUs but computes nothing on them"
              : fmt::format("{} of the job's {} GPUs are held but idle", evidence.size(), enough),
      .evidence = std::move(evidence),
      .action = "check that the model and every batch are moved to the GPU (model.to(\"cuda\")), "
                "that each rank uses its own device (torch.cuda.set_device(LOCAL_RANK)), and that "
                "the job is not stuck (trainyard logs); otherwise request fewer GPUs",
  });
}

void input_bound_rule(Context& ctx) {
  if (ctx.input_measured_ok) return;  // the step metrics measured the input pipeline: it is fine
  std::vector<std::string> evidence;
  for (const DeviceSeries* d : busy_devices(ctx)) {
    if (d->memory_mean_share <= ctx.t.input_bound_memory_share) continue;
    const bool low = d->util_p95 < ctx.t.low_util_p95 || d->util_mean < ctx.t.low_util_mean;
    const bool fluctuating =
        d->util_p95 >= ctx.t.low_util_p95 && d->util_p5 < ctx.t.fluctuating_util_p5;
    if (!low && !fluctuating) continue;
    evidence.push_back(fmt::format("{}: memory {} in use while {} ({})", d->label,
                                   percent(d->memory_mean_share), util_text(*d),
                                   low ? "low" : "fluctuating: busy, then waiting"));
  }
  if (evidence.empty()) return;
  if (Finding* f = ctx.find("input-bound")) {  // already measured from the step metrics
    f->evidence.insert(f->evidence.end(), evidence.begin(), evidence.end());
    return;
  }
  ctx.findings.push_back(Finding{
      .rule = "input-bound",
      .severity = "warning",
      .summary = "the GPU holds the model but is starved: most likely waiting for input data",
      .evidence = std::move(evidence),
      .action = "report data_wait_s and step_time_s (trainyard.metrics.report) to confirm; then "
                "feed the GPU faster: DataLoader(num_workers=<CPU cores per GPU>, pin_memory=True, "
                "prefetch_factor=4, persistent_workers=True), a binary shard format (WebDataset, "
                "Arrow/Parquet, numpy memmap) instead of many small files",
  });
}

// A smaller place the job would fit: a MIG profile of the same GPU, else a smaller data-center
// GPU from the catalog. `need` already includes the headroom.
std::optional<std::string> smaller_fit(const Context& ctx, uint64_t need, uint64_t current) {
  const model::Accelerator* acc = model::find_accelerator(ctx.model);
  if (acc != nullptr && !acc->mig_profiles.empty()) {
    const model::MigProfile* best = nullptr;
    for (const auto& p : acc->mig_profiles) {
      const auto mem = static_cast<uint64_t>(p.memory.value());
      if (mem < need || mem >= current) continue;
      if (best == nullptr || p.memory < best->memory ||
          (p.memory == best->memory && p.compute_slices < best->compute_slices)) {
        best = &p;
      }
    }
    if (best != nullptr) {
      return fmt::format("a MIG {} instance ({} GiB; nvidia.com/mig-{}: 1)", best->name,
                         best->memory.value() >> 30, best->name);
    }
  }
  const model::Accelerator* best = nullptr;
  for (const auto& a : model::accelerator_catalog()) {
    const auto mem = static_cast<uint64_t>(a.memory.value());
    if (mem < need || mem >= current || a.name == "RTX-2080TI") continue;
    if (!tensor_core_info(a.name).tensor_cores) continue;
    if (best == nullptr || a.memory < best->memory ||
        (a.memory == best->memory && a.fp16_tflops > best->fp16_tflops)) {
      best = &a;
    }
  }
  if (best == nullptr) return std::nullopt;
  return fmt::format("one {} ({} GiB)", best->name, best->memory.value() >> 30);
}

void underfilled_rule(Context& ctx) {
  std::vector<std::string> evidence;
  double worst_share = 0;
  uint64_t peak = 0, total = 0;
  for (const DeviceSeries* d : busy_devices(ctx)) {
    if (d->memory_total == 0 || d->memory_peak_share >= ctx.t.underfilled_memory_share) continue;
    if (d->util_mean >= ctx.t.underfilled_util_mean) continue;
    evidence.push_back(fmt::format("{}: peak memory {} of {} ({}), {}", d->label,
                                   gib(d->memory_peak), gib(d->memory_total),
                                   percent(d->memory_peak_share), util_text(*d)));
    if (d->memory_peak_share >= worst_share) {
      worst_share = d->memory_peak_share;
      peak = d->memory_peak;
      total = d->memory_total;
    }
  }
  if (evidence.empty()) return;
  const int factor = worst_share > 0 ? std::max(2, static_cast<int>(0.8 / worst_share)) : 4;
  std::string action = fmt::format(
      "raise the per-GPU batch size (memory allows about {}x) so each kernel has more work; to "
      "keep the global batch size, lower the gradient-accumulation steps by the same factor (or "
      "scale the learning rate with the batch)",
      factor);
  const auto need = static_cast<uint64_t>(static_cast<double>(peak) * ctx.t.right_size_headroom);
  if (auto smaller = smaller_fit(ctx, need, total)) {
    action += fmt::format("; if the batch cannot grow, {} is enough", *smaller);
  }
  ctx.findings.push_back(Finding{
      .rule = "under-filled",
      .severity = "warning",
      .summary = "the GPU is mostly empty: small batches leave memory and compute unused",
      .evidence = std::move(evidence),
      .action = std::move(action),
  });
}

void right_size_rule(Context& ctx) {
  if (ctx.has("under-filled")) return;  // its action already names the smaller fit
  const auto busy = busy_devices(ctx);
  if (busy.empty()) return;
  const DeviceSeries* fullest = busy.front();
  for (const DeviceSeries* d : busy) {
    if (d->util_p95 >= ctx.t.right_size_util_p95 || d->memory_total == 0) return;
    if (d->memory_peak > fullest->memory_peak) fullest = d;
  }
  const auto need =
      static_cast<uint64_t>(static_cast<double>(fullest->memory_peak) * ctx.t.right_size_headroom);
  auto smaller = smaller_fit(ctx, need, fullest->memory_total);
  if (!smaller) return;
  ctx.findings.push_back(Finding{
      .rule = "right-size",
      .severity = "info",
      .summary = fmt::format("the job would fit on {}", *smaller),
      .evidence = {fmt::format("{}: peak memory {} of {} ({}), needs {} with {:.0f}% headroom",
                               fullest->label, gib(fullest->memory_peak),
                               gib(fullest->memory_total), percent(fullest->memory_peak_share),
                               gib(need), (ctx.t.right_size_headroom - 1) * 100),
                   fmt::format("utilization p95 below {:.0f}% on every GPU ({}: {})",
                               ctx.t.right_size_util_p95, fullest->label, util_text(*fullest))},
      .action = fmt::format("request {} per worker next time; the {} it holds now can run a "
                            "larger job",
                            *smaller, ctx.model.empty() ? std::string("GPU") : ctx.model),
  });
}

}  // namespace

void run_gpu_rules(Context& ctx) {
  idle_rule(ctx);
  input_bound_rule(ctx);
  underfilled_rule(ctx);
  run_health_rules(ctx);
  run_balance_rules(ctx);
  run_tensor_rules(ctx);
  right_size_rule(ctx);
}

}  // namespace trainyard::telemetry::doctor_internal
