// Analyses a PyTorch profiler (Kineto) Chrome-trace JSON the way Holistic Trace Analysis does:
// GPU time per device split into compute, communication, memory copies and idle; idle time per
// stream by cause; kernel launch delays; top kernels; communication/computation overlap;
// iterations and data-loader share; tensor-core use; and doctor findings from those numbers.
// Reads only `ph:"X"` events, streaming through `traceEvents` (simdjson On-Demand), so traces of
// hundreds of MB parse at disk speed. Pure apart from analyze_kineto_trace_file()'s read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry/doctor.h"
#include "util/status.h"

namespace trainyard::telemetry {

// HTA's kernel classes (hta/common/trace_parser.py): communication `^nccl|ncclKernel` (also
// rccl/hccl), memory `^Memcpy|^Memset|^dma` (or a gpu_memcpy/gpu_memset event), else compute.
enum class KernelClass { Compute, Communication, Memory };
std::string_view kernel_class_name(KernelClass kind);
KernelClass classify_kernel(std::string_view name);
// Kernels that run on tensor cores, matched by name as kineto tb_plugin's tensor_core.py does
// (h884, s1688, hmma, xmma_gemm, ...), plus Ampere/Hopper cuBLAS and CUTLASS names that say
// tf32/bf16/f16/fp8 or tensorop/gmma. fp32 xmma kernels ("f32f32_f32f32_f32") are not.
bool is_tensor_core_kernel(std::string_view name);
// GEMM and convolution kernels: the work tensor cores could do.
bool is_gemm_kernel(std::string_view name);

struct TraceOptions {
  int top_kernels = 10;
  // HTA idle_time_breakdown: a gap shorter than this between kernels already queued is "kernel
  // wait" (launch overhead). HTA's docs say 30 "ns", but its timestamps are µs.
  double kernel_wait_us = 30;
  // HTA launch stats cutoffs: CPU launch calls longer than this are slow; delays longer than
  // delayed_launch_us are outliers.
  double slow_launch_us = 50;
  double delayed_launch_us = 100;
  // Findings. Short kernels < 50 µs and GPU idle > 20% (util < 80%) as in NVIDIA's CUDA-graphs
  // guidance; "most kernels are short" (>= 50%) is ours.
  double short_kernel_us = 50;
  double launch_bound_short_share = 0.5;
  double launch_bound_idle_share = 0.2;
  // kineto tb_plugin: DataLoader > 5% of a step; communication > 10% of a step; kernel-busy < 50%.
  double data_loader_share = 0.05;
  double communication_share = 0.10;
  double low_busy_share = 0.5;
  // Ours: overlap below half of communication time is "low".
  double low_overlap_share = 0.5;
  // tb_plugin: no tensor-core kernel time while TC-eligible ops ran. Ours: GEMMs must be at least
  // 5% of compute kernel time, and tensor-core time below 1% of GEMM time counts as none.
  double gemm_share = 0.05;
  double tensor_core_share_of_gemm = 0.01;
  // Ours: a device needs this many kernels before any finding is drawn from it.
  int64_t min_kernels = 100;
};

struct KernelSummary {
  std::string name;
  KernelClass kind = KernelClass::Compute;
  int64_t count = 0;
  double total_us = 0, mean_us = 0, min_us = 0, max_us = 0;
};

// Idle time between consecutive GPU events of one stream, by cause (HTA idle_time_breakdown):
// host wait = the launch call started after the previous event ended (the GPU waited on the
// CPU); kernel wait = a gap under kernel_wait_us; other = the rest (syncs, waits on events).
struct StreamIdle {
  int64_t stream = 0;
  int64_t events = 0;
  double idle_us = 0, host_wait_us = 0, kernel_wait_us = 0, other_us = 0;
};

// GPU events joined to their CUDA launch calls on `args.correlation` (HTA
// cuda_kernel_launch_stats).
struct LaunchStats {
  int64_t kernels = 0;              // compute and communication kernels (memcpy/memset excluded)
  int64_t short_kernels = 0;        // ... shorter than short_kernel_us
  int64_t joined = 0;               // GPU events with a launch call (cudaLaunchKernel, ...)
  int64_t shorter_than_launch = 0;  // GPU time < its CPU launch call's
  int64_t slow_launches = 0;        // launch call > slow_launch_us
  int64_t delayed = 0;              // launch delay > delayed_launch_us
  // Launch delay = gpu.ts - (cpu.ts + cpu.dur), clipped at 0.
  double delay_mean_us = 0, delay_p50_us = 0, delay_p95_us = 0, delay_max_us = 0;
  double launch_mean_us = 0;  // CPU time of the launch calls
};

// One GPU's timeline (HTA temporal breakdown). span = first event start .. last event end; busy
// = union of all GPU events; compute = union of compute kernels; non-compute = busy - compute.
struct DeviceTimeline {
  int64_t device = 0;
  int64_t events = 0;
  double span_us = 0, busy_us = 0, idle_us = 0;
  double compute_us = 0, non_compute_us = 0;
  double communication_us = 0, memory_us = 0;  // unions of those classes
  double overlap_us = 0;                       // compute ∩ communication
  double compute_kernel_us = 0;                // sum of compute kernel durations
  double gemm_us = 0, tensor_core_us = 0;      // sums of GEMM / tensor-core GEMM kernel durations
  std::vector<StreamIdle> streams;
  LaunchStats launch;
  std::vector<KernelSummary> top_kernels;  // by total time
};

struct Iteration {
  int64_t step = 0;  // N of ProfilerStep#N
  double start_us = 0, dur_us = 0;
  double data_loader_us = 0;  // enumerate(DataLoader)#...__next__ time inside the step
};

struct TraceAnalysis {
  std::optional<int64_t> rank;  // distributedInfo.rank
  int64_t events = 0;           // traceEvents entries
  int64_t complete_events = 0;  // ph "X"
  int64_t gpu_events = 0;
  std::optional<int> compute_capability;  // lowest deviceProperties computeMajor
  std::vector<DeviceTimeline> devices;
  std::vector<Iteration> iterations;
  double step_total_us = 0, data_loader_us = 0;
  std::optional<double> data_loader_share;  // of step time; needs ProfilerStep ranges
  std::vector<Finding> findings;
};

// `json` is the trace text. Errors say what is wrong and, where simdjson can tell, at which byte.
util::Result<TraceAnalysis> analyze_kineto_trace(std::string_view json,
                                                 const TraceOptions& options = {});
// Reads a file (gzip-compressed when it starts with the gzip magic, as `.json.gz` traces do).
util::Result<TraceAnalysis> analyze_kineto_trace_file(const std::string& path,
                                                      const TraceOptions& options = {});

std::string format_trace_report(const TraceAnalysis& analysis);
// The JSON parser and the simdjson kernels it uses on this CPU, for benchmark reports.
std::string kineto_json_backend();
nlohmann::json to_json(const TraceAnalysis& analysis);

}  // namespace trainyard::telemetry
