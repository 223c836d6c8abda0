// The Kineto trace analyser's internals: what the streaming parser (kineto_trace_parse.cc) keeps
// from a trace, handed to the analyses (kineto_trace_analysis.cc) and the findings
// (kineto_trace_report.cc). Not an interface: only telemetry/kineto_trace*.cc include it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/kineto_trace.h"

namespace trainyard::telemetry::kineto_internal {

// What an event name says, worked out once per distinct name (names repeat millions of times).
struct NameInfo {
  KernelClass kind = KernelClass::Compute;
  bool tensor_core = false;
  bool gemm = false;
  bool launch = false;         // a CUDA launch call (cudaLaunchKernel, cudaMemcpyAsync, ...)
  bool data_loader = false;    // enumerate(DataLoader)#...__next__
  int64_t profiler_step = -1;  // N of ProfilerStep#N, else -1
};

// Times are integer nanoseconds: Kineto writes µs with 3 decimals, so sums and unions are exact.
struct GpuEvent {
  int64_t ts_ns = 0, dur_ns = 0;
  int64_t device = 0, stream = 0, correlation = -1;
  uint32_t name = 0;
  KernelClass kind = KernelClass::Compute;
};

struct RuntimeCall {
  int64_t correlation = 0;
  int64_t ts_ns = 0, dur_ns = 0;
  uint32_t name = 0;
};

struct CpuRange {
  int64_t ts_ns = 0, dur_ns = 0;
  int64_t step = -1;
};

struct RawTrace {
  std::vector<std::string> names;
  std::vector<NameInfo> info;  // parallel to names
  std::vector<GpuEvent> gpu;
  std::vector<RuntimeCall> runtime;  // CUDA runtime/driver calls that carry a correlation id
  std::vector<CpuRange> steps;       // ProfilerStep#N ranges on the CPU
  std::vector<CpuRange> loaders;     // DataLoader __next__ ranges
  std::optional<int64_t> rank;
  std::optional<int> compute_capability;
  int64_t events = 0, complete_events = 0;
};

NameInfo describe_name(std::string_view name);

// Readable bytes the parser needs after the text (simdjson::SIMDJSON_PADDING).
inline constexpr size_t kJsonPadding = 64;

// Parses `len` bytes at `data`; `data` must have SIMDJSON_PADDING (64) readable bytes after them.
util::Result<RawTrace> parse_kineto(const char* data, size_t len);
TraceAnalysis analyze(RawTrace&& raw, const TraceOptions& options);
std::vector<Finding> trace_findings(const TraceAnalysis& analysis, const TraceOptions& options);

}  // namespace trainyard::telemetry::kineto_internal
