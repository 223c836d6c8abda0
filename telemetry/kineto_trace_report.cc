// What a trace analysis says: doctor findings from the numbers (thresholds in TraceOptions), a
// text report for people, and JSON for scripts.
#include <algorithm>

#include <fmt/format.h>

#include "telemetry/kineto_trace_internal.h"

namespace trainyard::telemetry {
namespace {

std::string pct(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "-";
}

std::string ms(double us) {
  return fmt::format("{:.1f} ms", us / 1000);
}

double share(double part, double whole) {
  return whole > 0 ? part / whole : 0;
}

// Evidence lines of one rule, merged across devices.
struct RuleHits {
  std::vector<std::string> evidence;
  void add(std::string line) { evidence.push_back(std::move(line)); }
};

}  // namespace

namespace kineto_internal {

std::vector<Finding> trace_findings(const TraceAnalysis& a, const TraceOptions& o) {
  RuleHits launch, comm, tensor, idle;
  for (const DeviceTimeline& d : a.devices) {
    if (d.launch.kernels < o.min_kernels || d.span_us <= 0) continue;
    const double idle_share = share(d.idle_us, d.span_us);
    const double short_share =
        share(static_cast<double>(d.launch.short_kernels), static_cast<double>(d.launch.kernels));
    const bool launch_bound =
        short_share >= o.launch_bound_short_share && idle_share > o.launch_bound_idle_share;
    if (launch_bound) {
      double host = 0, stream_idle = 0;
      for (const auto& s : d.streams) host += s.host_wait_us, stream_idle += s.idle_us;
      launch.add(fmt::format(
          "device {}: {} of {} kernels shorter than {:.0f} µs; GPU idle {} of the {} span; host "
          "wait {} of stream idle time; launch delay p50 {:.1f} µs, p95 {:.1f} µs",
          d.device, pct(short_share, 1), d.launch.kernels, o.short_kernel_us, pct(idle_share, 1),
          ms(d.span_us), pct(host, stream_idle), d.launch.delay_p50_us, d.launch.delay_p95_us));
    } else if (share(d.busy_us, d.span_us) < o.low_busy_share) {
      idle.add(fmt::format("device {}: busy {} of the {} span (compute {}, other GPU work {})",
                           d.device, pct(d.busy_us, d.span_us), ms(d.span_us),
                           pct(d.compute_us, d.span_us), pct(d.non_compute_us, d.span_us)));
    }
    if (share(d.communication_us, d.span_us) > o.communication_share &&
        share(d.overlap_us, d.communication_us) < o.low_overlap_share) {
      comm.add(fmt::format(
          "device {}: communication kernels {} ({}) of the {} span, {} of it overlapped with "
          "compute",
          d.device, ms(d.communication_us), pct(d.communication_us, d.span_us), ms(d.span_us),
          pct(d.overlap_us, d.communication_us)));
    }
    const bool tc_capable = !a.compute_capability || *a.compute_capability >= 7;
    if (tc_capable && share(d.gemm_us, d.compute_kernel_us) >= o.gemm_share &&
        share(d.tensor_core_us, d.gemm_us) < o.tensor_core_share_of_gemm) {
      tensor.add(
          fmt::format("device {}: GEMM/convolution kernels {} of compute kernel time ({}), "
                      "tensor-core kernels {}",
                      d.device, pct(d.gemm_us, d.compute_kernel_us), ms(d.gemm_us),
                      pct(d.tensor_core_us, d.gemm_us)));
    }
  }
  std::vector<Finding> out;
  if (!launch.evidence.empty()) {
    out.push_back({"launch-bound", "warning",
                   "the GPU waits for the CPU to launch many short kernels",
                   std::move(launch.evidence),
                   "cut launch overhead: capture the step in a CUDA graph "
                   "(torch.compile(mode=\"reduce-overhead\") or torch.cuda.graphs), let "
                   "torch.compile fuse small ops, or raise the batch size so each kernel does "
                   "more work"});
  }
  if (a.data_loader_share && *a.data_loader_share > o.data_loader_share &&
      a.iterations.size() >= 2) {
    out.push_back(
        {"input-bound",
         "warning",
         "the training loop waits for the DataLoader",
         {fmt::format("DataLoader __next__ {} of step time over {} steps ({} of {}; threshold {})",
                      pct(*a.data_loader_share, 1), a.iterations.size(), ms(a.data_loader_us),
                      ms(a.step_total_us), pct(o.data_loader_share, 1))},
         "feed the GPU faster: DataLoader(num_workers=<CPU cores per GPU>, pin_memory=True, "
         "prefetch_factor=4, persistent_workers=True) and a binary shard format (WebDataset, "
         "Arrow/Parquet, numpy memmap) instead of many small files"});
  }
  if (!comm.evidence.empty()) {
    out.push_back({"communication-bound", "warning",
                   "communication takes a large share of the step and is not hidden behind compute",
                   std::move(comm.evidence),
                   "overlap it: DDP gradient bucketing (bucket_cap_mb) so all-reduce runs during "
                   "backward, no_sync() while accumulating gradients, FSDP prefetch "
                   "(forward_prefetch, backward_prefetch); keep ranks on NVLink-connected GPUs"});
  }
  if (!tensor.evidence.empty()) {
    out.push_back({"no-tensor-cores", "warning",
                   "matrix multiplies run without tensor cores (fp32)", std::move(tensor.evidence),
                   "train under torch.autocast(\"cuda\", dtype=torch.bfloat16) (fp16 with a "
                   "GradScaler before Ampere), and allow TF32 for the fp32 matmuls that remain: "
                   "torch.set_float32_matmul_precision(\"high\")"});
  }
  if (!idle.evidence.empty()) {
    out.push_back({"low-gpu-busy", "info", "the GPU is idle for more than half of the trace",
                   std::move(idle.evidence),
                   "see the stream idle breakdown: host wait means the CPU is the bottleneck "
                   "(input, Python overhead); other idle means synchronisations in the step "
                   "(.item(), .cpu(), torch.cuda.synchronize()); then raise the batch size"});
  }
  for (Finding& f : out) f.sdk = std::string(sdk_fix(f.rule));
  return out;
}

}  // namespace kineto_internal

std::string format_trace_report(const TraceAnalysis& a) {
  std::string out = fmt::format("trace: {}{} events, {} complete, {} on GPUs, {} iterations\n",
                                a.rank ? fmt::format("rank {}, ", *a.rank) : "", a.events,
                                a.complete_events, a.gpu_events, a.iterations.size());
  for (const DeviceTimeline& d : a.devices) {
    out += fmt::format("\ndevice {}: span {}, busy {} (compute {}, non-compute {}), idle {}\n",
                       d.device, ms(d.span_us), pct(d.busy_us, d.span_us),
                       pct(d.compute_us, d.span_us), pct(d.non_compute_us, d.span_us),
                       pct(d.idle_us, d.span_us));
    out += fmt::format(
        "  communication {} ({} of span; {} overlapped with compute), memcpy/memset {} ({})\n",
        ms(d.communication_us), pct(d.communication_us, d.span_us),
        pct(d.overlap_us, d.communication_us), ms(d.memory_us), pct(d.memory_us, d.span_us));
    out += fmt::format(
        "  kernels {}: {} shorter than 50 µs; GEMM {} of compute time, tensor-core "
        "{} of GEMM time\n",
        d.launch.kernels,
        pct(static_cast<double>(d.launch.short_kernels), static_cast<double>(d.launch.kernels)),
        pct(d.gemm_us, d.compute_kernel_us), pct(d.tensor_core_us, d.gemm_us));
    out += fmt::format(
        "  launches joined {}: delay mean {:.1f} µs, p50 {:.1f}, p95 {:.1f}, max "
        "{:.1f}; CPU launch mean {:.1f} µs; {} kernels shorter than their launch\n",
        d.launch.joined, d.launch.delay_mean_us, d.launch.delay_p50_us, d.launch.delay_p95_us,
        d.launch.delay_max_us, d.launch.launch_mean_us, d.launch.shorter_than_launch);
    for (const StreamIdle& s : d.streams) {
      out +=
          fmt::format("  stream {}: {} events, idle {} (host wait {}, kernel wait {}, other {})\n",
                      s.stream, s.events, ms(s.idle_us), pct(s.host_wait_us, s.idle_us),
                      pct(s.kernel_wait_us, s.idle_us), pct(s.other_us, s.idle_us));
    }
    out += "  top kernels by total time:\n";
    for (const KernelSummary& k : d.top_kernels) {
      const std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
      out += fmt::format("  {:>10.2f} ms {:>8} x {:>10.1f} µs  {:<13} {}\n", k.total_us / 1000,
                         k.count, k.mean_us, kernel_class_name(k.kind), name);
    }
  }
  if (!a.iterations.empty()) {
    out += fmt::format("\niterations: {}, mean {} per step; DataLoader {} of step time\n",
                       a.iterations.size(),
                       ms(a.step_total_us / static_cast<double>(a.iterations.size())),
                       a.data_loader_share ? pct(*a.data_loader_share, 1) : "-");
  }
  out += a.findings.empty() ? "\nfindings: none\n" : "\nfindings:\n";
  for (const Finding& f : a.findings) {
    out += fmt::format("  [{}] {}: {}\n", f.severity, f.rule, f.summary);
    for (const auto& e : f.evidence) out += "    - " + e + "\n";
    out += "    action: " + f.action + "\n";
    if (!f.sdk.empty()) out += "    with trainyard: " + f.sdk + "\n";
  }
  return out;
}

nlohmann::json to_json(const TraceAnalysis& a) {
  using nlohmann::json;
  json devices = json::array();
  for (const DeviceTimeline& d : a.devices) {
    json streams = json::array(), kernels = json::array();
    for (const StreamIdle& s : d.streams) {
      streams.push_back({{"stream", s.stream},
                         {"events", s.events},
                         {"idle_us", s.idle_us},
                         {"host_wait_us", s.host_wait_us},
                         {"kernel_wait_us", s.kernel_wait_us},
                         {"other_us", s.other_us}});
    }
    for (const KernelSummary& k : d.top_kernels) {
      kernels.push_back({{"name", k.name},
                         {"class", kernel_class_name(k.kind)},
                         {"count", k.count},
                         {"total_us", k.total_us},
                         {"mean_us", k.mean_us},
                         {"min_us", k.min_us},
                         {"max_us", k.max_us}});
    }
    const LaunchStats& l = d.launch;
    devices.push_back({{"device", d.device},
                       {"events", d.events},
                       {"span_us", d.span_us},
                       {"busy_us", d.busy_us},
                       {"idle_us", d.idle_us},
                       {"compute_us", d.compute_us},
                       {"non_compute_us", d.non_compute_us},
                       {"communication_us", d.communication_us},
                       {"memory_us", d.memory_us},
                       {"overlap_us", d.overlap_us},
                       {"compute_kernel_us", d.compute_kernel_us},
                       {"gemm_us", d.gemm_us},
                       {"tensor_core_us", d.tensor_core_us},
                       {"streams", std::move(streams)},
                       {"launch",
                        {{"kernels", l.kernels},
                         {"short_kernels", l.short_kernels},
                         {"joined", l.joined},
                         {"shorter_than_launch", l.shorter_than_launch},
                         {"slow_launches", l.slow_launches},
                         {"delayed", l.delayed},
                         {"delay_mean_us", l.delay_mean_us},
                         {"delay_p50_us", l.delay_p50_us},
                         {"delay_p95_us", l.delay_p95_us},
                         {"delay_max_us", l.delay_max_us},
                         {"launch_mean_us", l.launch_mean_us}}},
                       {"top_kernels", std::move(kernels)}});
  }
  json iterations = json::array();
  for (const Iteration& it : a.iterations) {
    iterations.push_back({{"step", it.step},
                          {"start_us", it.start_us},
                          {"dur_us", it.dur_us},
                          {"data_loader_us", it.data_loader_us}});
  }
  json findings = json::array();
  for (const Finding& f : a.findings) findings.push_back(to_json(f));
  return {
      {"rank", a.rank ? json(*a.rank) : json(nullptr)},
      {"events", a.events},
      {"complete_events", a.complete_events},
      {"gpu_events", a.gpu_events},
      {"compute_capability", a.compute_capability ? json(*a.compute_capability) : json(nullptr)},
      {"devices", std::move(devices)},
      {"iterations", std::move(iterations)},
      {"step_total_us", a.step_total_us},
      {"data_loader_us", a.data_loader_us},
      {"data_loader_share", a.data_loader_share ? json(*a.data_loader_share) : json(nullptr)},
      {"findings", std::move(findings)}};
}

}  // namespace trainyard::telemetry
