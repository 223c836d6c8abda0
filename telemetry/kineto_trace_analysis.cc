// HTA's analyses over the events the parser kept: temporal breakdown, idle time by cause per
// stream, launch statistics, top kernels, communication/computation overlap, iterations and
// data-loader time. Definitions follow hta/analyzers/*; kineto_trace.h states each one.
#include <algorithm>
#include <cctype>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "telemetry/kineto_trace_internal.h"

namespace trainyard::telemetry {
namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string_view kernel_class_name(KernelClass kind) {
  switch (kind) {
    case KernelClass::Communication:
      return "communication";
    case KernelClass::Memory:
      return "memory";
    case KernelClass::Compute:
      break;
  }
  return "compute";
}

KernelClass classify_kernel(std::string_view name) {
  if (name.starts_with("nccl") || name.starts_with("rccl") || name.starts_with("hccl") ||
      contains(name, "ncclKernel") || contains(name, "ncclDevKernel")) {
    return KernelClass::Communication;
  }
  if (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("hipMemcpy") ||
      name.starts_with("hipMemset") || name.starts_with("dma")) {
    return KernelClass::Memory;
  }
  return KernelClass::Compute;
}

bool is_tensor_core_kernel(std::string_view name) {
  // cuBLAS's plain fp32 kernels carry xmma in the name but run on the CUDA cores.
  if (contains(name, "f32f32_f32f32_f32") && !contains(name, "tf32")) return false;
  static constexpr std::string_view kPatterns[] = {"h884",        "s884",
                                                   "h1688",       "s1688",
                                                   "c1688",       "hmma",
                                                   "i8816",       "16816",
                                                   "xmma_gemm",   "xmma_implicit_gemm",
                                                   "xmma_sparse", "xmma_warp_specialized",
                                                   "tensorop",    "gmma",
                                                   "flash_fwd",   "flash_bwd",
                                                   "fmha"};
  for (std::string_view p : kPatterns) {
    if (contains(name, p)) return true;
  }
  if (name.starts_with("sm80_") || name.starts_with("sm86_") || name.starts_with("sm89_") ||
      name.starts_with("sm90_") || name.starts_with("sm100_")) {
    for (std::string_view t : {"tf32", "bf16", "f16", "e4m3", "e5m2", "i8"}) {
      if (contains(name, t)) return true;
    }
  }
  // cuBLAS 12 "nvjet" kernels spell the types in their second field; "sss" is plain fp32.
  return name.starts_with("nvjet_") && !name.starts_with("nvjet_sss");
}

bool is_gemm_kernel(std::string_view name) {
  const std::string l = lower(name);
  for (std::string_view p : {"gemm", "convolve", "conv2d", "conv3d", "dgrad", "wgrad", "fprop"}) {
    if (contains(l, p)) return true;
  }
  return l.starts_with("nvjet");
}

namespace kineto_internal {

NameInfo describe_name(std::string_view name) {
  NameInfo info;
  info.kind = classify_kernel(name);
  info.tensor_core = is_tensor_core_kernel(name);
  info.gemm = is_gemm_kernel(name);
  info.launch = name.starts_with("cudaLaunchKernel") || name.starts_with("cuLaunchKernel") ||
                name == "cudaLaunchCooperativeKernel" || name == "cudaMemcpyAsync" ||
                name == "cudaMemsetAsync" || name.starts_with("hipLaunchKernel") ||
                name == "hipExtLaunchKernel" || name == "hipMemcpyAsync";
  info.data_loader = name.starts_with("enumerate(DataLoader)") && contains(name, "__next__");
  constexpr std::string_view kStep = "ProfilerStep#";
  if (name.starts_with(kStep) && name.size() > kStep.size() && name.size() <= kStep.size() + 15) {
    int64_t n = 0;
    bool digits = true;
    for (char c : name.substr(kStep.size())) {
      if (!std::isdigit(static_cast<unsigned char>(c))) digits = false;
      n = n * 10 + (c - '0');
    }
    if (digits) info.profiler_step = n;
  }
  return info;
}

namespace {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in ns

double us(int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// Union of the events of one device (sorted by start) that `keep` selects.
template <typename Keep>
std::vector<Interval> merged(std::span<const GpuEvent> events, Keep keep) {
  std::vector<Interval> out;
  for (const GpuEvent& e : events) {
    if (!keep(e)) continue;
    const int64_t end = e.ts_ns + e.dur_ns;
    if (out.empty() || e.ts_ns > out.back().second) {
      out.emplace_back(e.ts_ns, end);
    } else {
      out.back().second = std::max(out.back().second, end);
    }
  }
  return out;
}

int64_t length(const std::vector<Interval>& v) {
  int64_t sum = 0;
  for (const auto& [a, b] : v) sum += b - a;
  return sum;
}

int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t sum = 0;
  size_t i = 0, k = 0;
  while (i < a.size() && k < b.size()) {
    const int64_t lo = std::max(a[i].first, b[k].first);
    const int64_t hi = std::min(a[i].second, b[k].second);
    if (hi > lo) sum += hi - lo;
    (a[i].second < b[k].second) ? ++i : ++k;
  }
  return sum;
}

// Runtime calls sorted by correlation; a correlation can have a runtime and a driver call, so the
// launch call is preferred.
class LaunchIndex {
 public:
  LaunchIndex(std::vector<RuntimeCall>& calls, const std::vector<NameInfo>& info)
      : calls_(calls), info_(info) {
    std::stable_sort(calls_.begin(), calls_.end(), [](const RuntimeCall& a, const RuntimeCall& b) {
      return a.correlation < b.correlation;
    });
  }
  const RuntimeCall* find(int64_t correlation) const {
    if (correlation < 0) return nullptr;
    auto it = std::lower_bound(calls_.begin(), calls_.end(), correlation,
                               [](const RuntimeCall& c, int64_t v) { return c.correlation < v; });
    const RuntimeCall* first = nullptr;
    for (; it != calls_.end() && it->correlation == correlation; ++it) {
      if (info_[it->name].launch) return &*it;
      if (first == nullptr) first = &*it;
    }
    return first;
  }

 private:
  std::vector<RuntimeCall>& calls_;
  const std::vector<NameInfo>& info_;
};

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void temporal_breakdown(std::span<const GpuEvent> events, const RawTrace& raw, DeviceTimeline& d) {
  int64_t first = events.front().ts_ns, last = first;
  for (const GpuEvent& e : events) last = std::max(last, e.ts_ns + e.dur_ns);
  const auto busy = merged(events, [](const GpuEvent&) { return true; });
  const auto compute =
      merged(events, [](const GpuEvent& e) { return e.kind == KernelClass::Compute; });
  const auto comm =
      merged(events, [](const GpuEvent& e) { return e.kind == KernelClass::Communication; });
  const auto memory =
      merged(events, [](const GpuEvent& e) { return e.kind == KernelClass::Memory; });
  d.events = static_cast<int64_t>(events.size());
  d.span_us = us(last - first);
  d.busy_us = us(length(busy));
  d.idle_us = d.span_us - d.busy_us;
  d.compute_us = us(length(compute));
  d.non_compute_us = d.busy_us - d.compute_us;
  d.communication_us = us(length(comm));
  d.memory_us = us(length(memory));
  d.overlap_us = us(intersection(compute, comm));
  int64_t compute_sum = 0, gemm = 0, tensor = 0;
  for (const GpuEvent& e : events) {
    if (e.kind != KernelClass::Compute) continue;
    compute_sum += e.dur_ns;
    // Tensor-core time is counted among the GEMMs only, as a share of them: attention kernels
    // (flash, cuDNN's sdpa) use tensor cores too but are not GEMMs, and counting them made the
    // share exceed 100% on a real H100 trace.
    if (raw.info[e.name].gemm) {
      gemm += e.dur_ns;
      if (raw.info[e.name].tensor_core) tensor += e.dur_ns;
    }
  }
  d.compute_kernel_us = us(compute_sum);
  d.gemm_us = us(gemm);
  d.tensor_core_us = us(tensor);
}

void stream_idle(std::span<const GpuEvent> events, const LaunchIndex& launches,
                 const TraceOptions& opt, DeviceTimeline& d) {
  std::vector<const GpuEvent*> order;
  order.reserve(events.size());
  for (const GpuEvent& e : events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](const GpuEvent* a, const GpuEvent* b) { return a->stream < b->stream; });
  const auto kernel_wait_ns = static_cast<int64_t>(opt.kernel_wait_us * 1000);
  for (size_t i = 0; i < order.size();) {
    StreamIdle s{.stream = order[i]->stream};
    int64_t prev_end = order[i]->ts_ns + order[i]->dur_ns;
    int64_t host = 0, kernel = 0, other = 0;
    size_t k = i;
    for (++s.events, ++k; k < order.size() && order[k]->stream == s.stream; ++k, ++s.events) {
      const GpuEvent& e = *order[k];
      const int64_t previous_end = prev_end;
      const int64_t gap = e.ts_ns - previous_end;
      prev_end = std::max(prev_end, e.ts_ns + e.dur_ns);
      if (gap <= 0) continue;
      const RuntimeCall* call = launches.find(e.correlation);
      if (call != nullptr && call->ts_ns > previous_end) {
        host += gap;  // launched only after the previous event had finished
      } else if (gap < kernel_wait_ns) {
        kernel += gap;
      } else {
        other += gap;
      }
    }
    s.host_wait_us = us(host);
    s.kernel_wait_us = us(kernel);
    s.other_us = us(other);
    s.idle_us = us(host + kernel + other);
    d.streams.push_back(s);
    i = k;
  }
}

void launch_stats(std::span<const GpuEvent> events, const RawTrace& raw,
                  const LaunchIndex& launches, const TraceOptions& opt, LaunchStats& ls) {
  std::vector<double> delays;
  double launch_sum = 0;
  for (const GpuEvent& e : events) {
    if (e.kind != KernelClass::Memory) {
      ++ls.kernels;
      if (us(e.dur_ns) < opt.short_kernel_us) ++ls.short_kernels;
    }
    const RuntimeCall* call = launches.find(e.correlation);
    if (call == nullptr || !raw.info[call->name].launch) continue;
    ++ls.joined;
    const double delay = us(std::max<int64_t>(0, e.ts_ns - (call->ts_ns + call->dur_ns)));
    delays.push_back(delay);
    launch_sum += us(call->dur_ns);
    if (e.dur_ns < call->dur_ns) ++ls.shorter_than_launch;
    if (us(call->dur_ns) > opt.slow_launch_us) ++ls.slow_launches;
    if (delay > opt.delayed_launch_us) ++ls.delayed;
  }
  if (delays.empty()) return;
  double sum = 0;
  for (double x : delays) sum += x;
  ls.delay_mean_us = sum / static_cast<double>(delays.size());
  ls.launch_mean_us = launch_sum / static_cast<double>(delays.size());
  ls.delay_max_us = *std::max_element(delays.begin(), delays.end());
  ls.delay_p50_us = percentile(delays, 0.5);
  ls.delay_p95_us = percentile(delays, 0.95);
}

void top_kernels(std::span<const GpuEvent> events, const RawTrace& raw, int n, DeviceTimeline& d) {
  std::unordered_map<uint32_t, KernelSummary> by_name;
  for (const GpuEvent& e : events) {
    KernelSummary& k = by_name[e.name];
    const double dur = us(e.dur_ns);
    k.min_us = k.count == 0 ? dur : std::min(k.min_us, dur);
    k.max_us = std::max(k.max_us, dur);
    k.total_us += dur;
    k.kind = e.kind;
    ++k.count;
  }
  std::vector<std::pair<uint32_t, KernelSummary>> all(by_name.begin(), by_name.end());
  std::sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    if (a.second.total_us != b.second.total_us) return a.second.total_us > b.second.total_us;
    return raw.names[a.first] < raw.names[b.first];
  });
  for (size_t i = 0; i < all.size() && static_cast<int>(i) < n; ++i) {
    KernelSummary k = all[i].second;
    k.name = raw.names[all[i].first];
    k.mean_us = k.total_us / static_cast<double>(k.count);
    d.top_kernels.push_back(std::move(k));
  }
}

void iterations(RawTrace& raw, TraceAnalysis& out) {
  auto by_start = [](const CpuRange& a, const CpuRange& b) { return a.ts_ns < b.ts_ns; };
  std::stable_sort(raw.steps.begin(), raw.steps.end(), by_start);
  std::sort(raw.loaders.begin(), raw.loaders.end(), by_start);
  std::unordered_set<int64_t> seen;
  size_t j = 0;
  int64_t step_total = 0, loader_total = 0;
  for (const CpuRange& s : raw.steps) {
    // A step can be recorded twice (cpu_op and user_annotation); the first one counts.
    if (!seen.insert(s.step).second) continue;
    const int64_t end = s.ts_ns + s.dur_ns;
    while (j < raw.loaders.size() && raw.loaders[j].ts_ns + raw.loaders[j].dur_ns <= s.ts_ns) ++j;
    int64_t loader = 0;
    for (size_t k = j; k < raw.loaders.size() && raw.loaders[k].ts_ns < end; ++k) {
      loader += std::max<int64_t>(0, std::min(end, raw.loaders[k].ts_ns + raw.loaders[k].dur_ns) -
                                         std::max(s.ts_ns, raw.loaders[k].ts_ns));
    }
    out.iterations.push_back(Iteration{.step = s.step,
                                       .start_us = us(s.ts_ns),
                                       .dur_us = us(s.dur_ns),
                                       .data_loader_us = us(loader)});
    step_total += s.dur_ns;
    loader_total += loader;
  }
  out.step_total_us = us(step_total);
  out.data_loader_us = us(loader_total);
  if (step_total > 0)
    out.data_loader_share = static_cast<double>(loader_total) / static_cast<double>(step_total);
}

}  // namespace

TraceAnalysis analyze(RawTrace&& raw, const TraceOptions& opt) {
  TraceAnalysis out;
  out.rank = raw.rank;
  out.events = raw.events;
  out.complete_events = raw.complete_events;
  out.gpu_events = static_cast<int64_t>(raw.gpu.size());
  out.compute_capability = raw.compute_capability;
  const LaunchIndex launches(raw.runtime, raw.info);
  std::stable_sort(raw.gpu.begin(), raw.gpu.end(), [](const GpuEvent& a, const GpuEvent& b) {
    return a.device != b.device ? a.device < b.device : a.ts_ns < b.ts_ns;
  });
  for (size_t i = 0; i < raw.gpu.size();) {
    size_t k = i;
    while (k < raw.gpu.size() && raw.gpu[k].device == raw.gpu[i].device) ++k;
    const std::span<const GpuEvent> events(raw.gpu.data() + i, k - i);
    DeviceTimeline d{.device = raw.gpu[i].device};
    temporal_breakdown(events, raw, d);
    stream_idle(events, launches, opt, d);
    launch_stats(events, raw, launches, opt, d.launch);
    top_kernels(events, raw, opt.top_kernels, d);
    out.devices.push_back(std::move(d));
    i = k;
  }
  iterations(raw, out);
  out.findings = trace_findings(out, opt);
  return out;
}

}  // namespace kineto_internal
}  // namespace trainyard::telemetry
