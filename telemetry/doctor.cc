#include "telemetry/doctor.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "telemetry/doctor_internal.h"

namespace trainyard::telemetry {
namespace doctor_internal {

bool Context::has(std::string_view rule) const {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.rule == rule; });
}

Finding* Context::find(std::string_view rule) {
  for (auto& f : findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

std::string percent(double share) {
  return fmt::format("{:.1f}%", share * 100);
}

std::string gib(uint64_t bytes) {
  return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(1ULL << 30));
}

std::string duration(util::Duration d) {
  const double s = util::to_seconds(d);
  if (s < 120) return fmt::format("{:.0f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

double js_distance(const std::vector<double>& a, const std::vector<double>& b, int bins) {
  auto histogram = [bins](const std::vector<double>& values) {
    std::vector<double> h(static_cast<size_t>(bins), 0.0);
    for (double v : values) {
      const double clamped = std::clamp(v, 0.0, 100.0);
      auto bin = static_cast<int>(clamped / (100.0 / bins));
      h[static_cast<size_t>(std::min(bin, bins - 1))] += 1;
    }
    for (double& x : h) x /= static_cast<double>(values.size());
    return h;
  };
  if (a.empty() || b.empty() || bins < 1) return 0;
  const auto p = histogram(a);
  const auto q = histogram(b);
  double divergence = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double m = (p[i] + q[i]) / 2;
    if (p[i] > 0) divergence += p[i] * std::log(p[i] / m) / 2;
    if (q[i] > 0) divergence += q[i] * std::log(q[i] / m) / 2;
  }
  return std::sqrt(std::max(divergence, 0.0));
}

std::vector<const DeviceSeries*> busy_devices(const Context& ctx) {
  std::vector<const DeviceSeries*> out;
  for (const auto& d : ctx.devices) {
    if (d.enough && d.has_util && !d.idle) out.push_back(&d);
  }
  return out;
}

std::vector<DeviceSeries> split_devices(const JobTelemetry& job, const DoctorThresholds& t) {
  std::map<std::string, DeviceSeries> by_key;
  std::vector<std::string> order;  // first appearance, so reports follow the job's device order
  for (const GpuSample& s : job.samples) {
    const std::string key = !s.uuid.empty() ? s.uuid : fmt::format("index {}", s.index);
    auto [it, inserted] = by_key.try_emplace(key);
    DeviceSeries& d = it->second;
    if (inserted) {
      order.push_back(key);
      d.key = key;
      d.model = s.model;
      d.is_mig = s.is_mig;
      d.mig_profile = s.mig_profile;
      d.label = s.is_mig ? fmt::format("GPU {} (MIG {})", s.index, s.mig_profile)
                         : fmt::format("GPU {}", s.index);
      d.first = s.time;
    }
    d.first = std::min(d.first, s.time);
    d.last = std::max(d.last, s.time);
    ++d.samples;
    if (s.gpu_util_percent) {
      d.util.push_back(*s.gpu_util_percent);
    } else if (s.sm_active_percent) {
      d.util.push_back(*s.sm_active_percent);
    }
    if (s.tensor_active_percent) d.tensor.push_back(*s.tensor_active_percent);
    if (s.memory_used_bytes && s.memory_total_bytes && *s.memory_total_bytes > 0) {
      d.memory_total = std::max(d.memory_total, *s.memory_total_bytes);
      d.memory_peak = std::max(d.memory_peak, *s.memory_used_bytes);
      d.memory_share.push_back(static_cast<double>(*s.memory_used_bytes) /
                               static_cast<double>(*s.memory_total_bytes));
    }
    if (s.throttle_reasons) {
      ++d.throttle_known;
      if ((*s.throttle_reasons & kThrottleThermalOrPower) != 0) ++d.throttle_hits;
    }
    if (s.temperature_c) d.max_temperature_c = std::max(d.max_temperature_c, *s.temperature_c);
    if (s.slowdown_temperature_c) d.slowdown_temperature_c = *s.slowdown_temperature_c;
  }
  std::vector<DeviceSeries> out;
  for (const auto& key : order) {
    DeviceSeries d = std::move(by_key[key]);
    d.enough = d.samples >= t.min_samples_per_gpu && d.last - d.first >= t.min_duration;
    d.has_util = static_cast<int64_t>(d.util.size()) >= t.min_samples_per_gpu;
    if (!d.util.empty()) {
      d.util_mean = mean(d.util);
      d.util_p5 = quantile(d.util, 0.05);
      d.util_p95 = quantile(d.util, 0.95);
      const auto low =
          std::count_if(d.util.begin(), d.util.end(), [&](double u) { return u < t.idle_util; });
      d.idle_share = static_cast<double>(low) / static_cast<double>(d.util.size());
    }
    d.idle = d.enough && d.has_util && d.idle_share >= t.idle_sample_share;
    if (!d.tensor.empty()) d.tensor_mean = mean(d.tensor);
    if (d.memory_total > 0) {
      d.memory_peak_share =
          static_cast<double>(d.memory_peak) / static_cast<double>(d.memory_total);
      d.memory_mean_share = mean(d.memory_share);
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace doctor_internal

namespace {

using doctor_internal::Context;

void fill_sample_stats(Context& ctx) {
  DoctorStats& st = ctx.stats;
  st.devices = static_cast<int>(ctx.devices.size());
  st.samples = static_cast<int64_t>(ctx.job.samples.size());
  util::Time first{}, last{};
  std::vector<double> all_util;
  for (const auto& d : ctx.devices) {
    first = (&d == &ctx.devices.front()) ? d.first : std::min(first, d.first);
    last = std::max(last, d.last);
    all_util.insert(all_util.end(), d.util.begin(), d.util.end());
    if (d.enough) st.enough_samples = true;
    if (d.memory_total > 0 &&
        (!st.memory_peak_share || d.memory_peak_share > *st.memory_peak_share)) {
      st.memory_peak_share = d.memory_peak_share;
      st.memory_peak_bytes = d.memory_peak;
    }
  }
  if (!ctx.devices.empty()) st.duration_s = util::to_seconds(last - first);
  if (!all_util.empty()) {
    st.util_mean = doctor_internal::mean(all_util);
    st.util_p5 = doctor_internal::quantile(all_util, 0.05);
    st.util_p95 = doctor_internal::quantile(all_util, 0.95);
  }
}

std::string canonical_model(const JobTelemetry& job) {
  if (!job.accelerator_model.empty())
    return model::canonical_accelerator_name(job.accelerator_model);
  for (const auto& s : job.samples) {
    if (!s.model.empty()) return model::canonical_accelerator_name(s.model);
  }
  return "";
}

std::string verdict_of(const Context& ctx) {
  const auto& f = ctx.findings;
  if (f.empty()) {
    if (ctx.stats.enough_samples || ctx.stats.enough_steps) return "healthy";
    return fmt::format(
        "not enough data yet: {} GPU samples over {} and {} metric lines (need {} samples over {} "
        "per GPU, or {} metric lines)",
        ctx.stats.samples, doctor_internal::duration(util::seconds_f(ctx.stats.duration_s)),
        ctx.stats.steps, ctx.t.min_samples_per_gpu, doctor_internal::duration(ctx.t.min_duration),
        ctx.t.min_steps);
  }
  std::string v = f.front().rule + ": " + f.front().summary;
  if (f.size() > 1)
    v += fmt::format(" (+{} more finding{})", f.size() - 1, f.size() > 2 ? "s" : "");
  return v;
}

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::string_view sdk_fix(std::string_view rule) {
  // One line each, with the option named; docs/training.md shows them in a training loop.
  static constexpr std::pair<std::string_view, std::string_view> kFixes[] = {
      {"input-bound",
       "loader = trainyard.data.Loader(trainyard.data.ShardDataset(\"/data/train\"), "
       "batch_size=64, decode=decode, workers=4)  # shards written once by "
       "trainyard.data.write_dataset; prefetched in the background; decode_batch=f, "
       "mapped=True decodes whole batches in place, several times faster"},
      {"under-filled",
       "plan = trainyard.tune.tune(model, make_optimizer, sample_batch, global_batch=1024)  "
       "# the largest micro-batch whose step fits, accumulation for the rest"},
      {"near-oom",
       "plan = trainyard.tune.tune(model, make_optimizer, sample_batch, global_batch=1024)  "
       "# a micro-batch that fits with a margin, accumulation keeps the global batch"},
      {"fp32-on-tensor-cores",
       "trainer = trainyard.tune.tune(model, make_optimizer, sample_batch, "
       "global_batch=1024).trainer(model, optimizer)  # bf16 autocast (fp16 + GradScaler "
       "before Ampere), TF32"},
      {"tensor-cores-idle",
       "trainer = trainyard.tune.tune(model, make_optimizer, sample_batch, "
       "global_batch=1024).trainer(model, optimizer)  # autocast around forward and loss, "
       "TF32"},
      {"communication-bound",
       "model = trainyard.distributed.wrap(model, compression=\"fp16\")  # half the bytes at "
       "no measured loss cost (bf16 on NCCL); \"powersgd\" sends 45-230x fewer, but compare "
       "its loss: at rank 2 it trailed by 6-17%"},
      {"gpu-imbalance",
       "loader = trainyard.data.Loader(dataset, batch_size=64, seed=1)  # equal batches on "
       "every rank"},
      {"idle-gpu",
       "ctx = trainyard.distributed.init(); model = model.to(ctx.device)  # the GPU of this "
       "worker's LOCAL_RANK"},
  };
  for (const auto& [name, fix] : kFixes) {
    if (name == rule) return fix;
  }
  return {};
}

Diagnosis diagnose(const JobTelemetry& job, const DoctorThresholds& thresholds) {
  Context ctx{.job = job, .t = thresholds};
  ctx.model = canonical_model(job);
  ctx.stats.accelerator_model = ctx.model;
  ctx.devices = doctor_internal::split_devices(job, thresholds);
  fill_sample_stats(ctx);
  // Step metrics first: a measured data wait overrides the GPU-sample guess at input-boundness.
  doctor_internal::run_step_rules(ctx);
  doctor_internal::run_gpu_rules(ctx);
  std::stable_sort(ctx.findings.begin(), ctx.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     return (a.severity == "warning") > (b.severity == "warning");
                   });
  for (Finding& f : ctx.findings) f.sdk = std::string(sdk_fix(f.rule));
  Diagnosis out;
  out.job_id = job.job_id;
  out.verdict = verdict_of(ctx);
  out.findings = std::move(ctx.findings);
  out.stats = std::move(ctx.stats);
  return out;
}

nlohmann::json to_json(const Finding& finding) {
  return {{"rule", finding.rule},
          {"severity", finding.severity},
          {"summary", finding.summary},
          {"evidence", finding.evidence},
          {"action", finding.action},
          {"sdk", finding.sdk.empty() ? nlohmann::json(nullptr) : nlohmann::json(finding.sdk)}};
}

nlohmann::json to_json(const StepMetrics::Tune& t) {
  return {{"micro_batch", t.micro_batch},
          {"accum_steps", opt(t.accum_steps)},
          {"world_size", opt(t.world_size)},
          {"global_batch", opt(t.global_batch)},
          {"target_global_batch", opt(t.target_global_batch)},
          {"largest_micro_batch", opt(t.largest_micro_batch)},
          {"speedup", opt(t.speedup)},
          {"step_time_s", opt(t.step_time_s)},
          {"naive_step_time_s", opt(t.naive_step_time_s)},
          {"channels_last", t.channels_last},
          {"tf32", t.tf32}};
}

nlohmann::json to_json(const Diagnosis& diagnosis) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : diagnosis.findings) findings.push_back(to_json(f));
  const DoctorStats& s = diagnosis.stats;
  return {{"job_id", diagnosis.job_id},
          {"verdict", diagnosis.verdict},
          {"findings", std::move(findings)},
          {"stats",
           {{"devices", s.devices},
            {"samples", s.samples},
            {"duration_s", s.duration_s},
            {"steps", s.steps},
            {"enough_samples", s.enough_samples},
            {"enough_steps", s.enough_steps},
            {"accelerator_model", s.accelerator_model},
            {"util_mean_percent", opt(s.util_mean)},
            {"util_p5_percent", opt(s.util_p5)},
            {"util_p95_percent", opt(s.util_p95)},
            {"memory_peak_share", opt(s.memory_peak_share)},
            {"memory_peak_bytes", opt(s.memory_peak_bytes)},
            {"data_wait_share", opt(s.data_wait_share)},
            {"step_time_mean_s", opt(s.step_time_mean_s)},
            {"dtype", s.dtype},
            {"comm_wait_share", opt(s.comm_wait_share)},
            {"comm_bytes_per_step", opt(s.comm_bytes_per_step)},
            {"tune", s.tune ? to_json(*s.tune) : nlohmann::json(nullptr)}}}};
}

}  // namespace trainyard::telemetry
