// The doctor's per-device health rules: growing memory (a leak), memory close to the capacity
// (near OOM), and clocks slowed by heat or power.
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "telemetry/doctor_internal.h"

namespace trainyard::telemetry::doctor_internal {
namespace {

struct LeakSignal {
  int rises = 0;        // window-to-window increases above leak_increase_share
  double first = 0;     // mean share of the first window after start-up
  double last = 0;      // ... of the last window
  double max_drop = 0;  // largest window-to-window decrease after start-up
  size_t windows = 0;
};

// Means of consecutive, non-overlapping windows of memory share; window 0 holds start-up
// allocations (weights, optimizer state), so comparisons start at window 1.
std::optional<LeakSignal> leak_signal(const DeviceSeries& d, const DoctorThresholds& t) {
  const auto w = static_cast<size_t>(std::max(1, t.leak_window));
  const size_t n = d.memory_share.size() / w;
  if (n < static_cast<size_t>(t.leak_min_rises) + 2) return std::nullopt;
  std::vector<double> means(n);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t k = 0; k < w; ++k) sum += d.memory_share[i * w + k];
    means[i] = sum / static_cast<double>(w);
  }
  LeakSignal s{.first = means[1], .last = means[n - 1], .windows = n};
  for (size_t i = 2; i < n; ++i) {
    const double delta = means[i] - means[i - 1];
    if (delta > t.leak_increase_share) ++s.rises;
    s.max_drop = std::max(s.max_drop, -delta);
  }
  // Still growing in the second half: start-up growth that levels off is not a leak.
  if (means[n - 1] - means[n / 2] <= t.leak_increase_share) return std::nullopt;
  return s;
}

void leak_rule(Context& ctx) {
  std::vector<std::string> evidence;
  for (const auto& d : ctx.devices) {
    if (!d.enough) continue;
    auto s = leak_signal(d, ctx.t);
    if (!s) continue;
    // SageMaker's trigger: repeated jumps. Ours: a slow climb that never gives memory back.
    const bool jumps = s->rises >= ctx.t.leak_min_rises;
    const bool climb = s->max_drop <= ctx.t.leak_max_drop_share &&
                       s->last - s->first > ctx.t.leak_min_rises * ctx.t.leak_increase_share;
    if (!jumps && !climb) continue;
    evidence.push_back(fmt::format(
        "{}: memory in use {} -> {} of {} over {} ({} windows of {} samples; {} rises above {}, "
        "largest drop {})",
        d.label, percent(s->first), percent(s->last), gib(d.memory_total),
        duration(d.last - d.first), s->windows, ctx.t.leak_window, s->rises,
        percent(ctx.t.leak_increase_share), percent(s->max_drop)));
  }
  if (evidence.empty()) return;
  ctx.findings.push_back(Finding{
      .rule = "memory-leak",
      .severity = "warning",
      .summary = "GPU memory keeps growing: the job will run out of memory",
      .evidence = std::move(evidence),
      .action = "look for tensors kept across steps: accumulate loss.item() (not loss) for "
                "logging, .detach() what is stored in lists or dicts (outputs, metrics, hidden "
                "states), clear caches keyed by step; compare torch.cuda.memory_allocated() "
                "between steps or record torch.cuda.memory._record_memory_history() snapshots",
  });
}

void near_oom_rule(Context& ctx) {
  std::vector<std::string> evidence;
  for (const auto& d : ctx.devices) {
    if (!d.enough || d.memory_total == 0 || d.memory_peak_share <= ctx.t.near_oom_share) continue;
    evidence.push_back(fmt::format("{}: peak memory {} of {} ({}; threshold {})", d.label,
                                   gib(d.memory_peak), gib(d.memory_total),
                                   percent(d.memory_peak_share), percent(ctx.t.near_oom_share)));
  }
  if (evidence.empty()) return;
  ctx.findings.push_back(Finding{
      .rule = "near-oom",
      .severity = "warning",
      .summary = "GPU memory is nearly full: a longer sequence or larger batch will run out",
      .evidence = std::move(evidence),
      .action = "make room: activation checkpointing (torch.utils.checkpoint), a smaller "
                "micro-batch with gradient accumulation, or sharded optimizer state (FSDP, "
                "ZeRO); the count includes PyTorch's cache, so compare with "
                "torch.cuda.max_memory_allocated() first",
  });
}

void throttle_rule(Context& ctx) {
  std::vector<std::string> evidence;
  for (const auto& d : ctx.devices) {
    if (!d.enough || d.throttle_known < ctx.t.min_samples_per_gpu) continue;
    const double share =
        static_cast<double>(d.throttle_hits) / static_cast<double>(d.throttle_known);
    if (share <= ctx.t.throttle_sample_share) continue;
    std::string line =
        fmt::format("{}: thermal or power slowdown in {} of {} samples (threshold {})", d.label,
                    percent(share), d.throttle_known, percent(ctx.t.throttle_sample_share));
    if (d.max_temperature_c > 0) line += fmt::format("; max {:.0f} °C", d.max_temperature_c);
    if (d.slowdown_temperature_c > 0) {
      line += fmt::format(" (slowdown at {:.0f} °C)", d.slowdown_temperature_c);
    }
    evidence.push_back(std::move(line));
  }
  if (evidence.empty()) return;
  ctx.findings.push_back(Finding{
      .rule = "thermal-throttling",
      .severity = "warning",
      .summary = "the GPU runs slowed down by heat or power limits",
      .evidence = std::move(evidence),
      .action = "a node problem, not the job's: tell the cluster operator (cooling, fans, power "
                "cap) and drain the node; resubmitting elsewhere restores full clocks",
  });
}

}  // namespace

void run_health_rules(Context& ctx) {
  leak_rule(ctx);
  near_oom_rule(ctx);
  throttle_rule(ctx);
}

}  // namespace trainyard::telemetry::doctor_internal
