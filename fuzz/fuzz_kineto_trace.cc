// Feeds arbitrary bytes to the Kineto trace analyser and to the metrics-file parser. Both must
// return a value or a Status for any input; an accepted trace must give consistent numbers (busy
// time within the span, compute within busy, overlap within both) and render as text and JSON.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "telemetry/doctor.h"
#include "telemetry/kineto_trace.h"
#include "util/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainyard;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto steps = telemetry::parse_step_metrics_text(text, "fuzz.jsonl");
  if (steps.is_ok()) (void)telemetry::diagnose({.steps = *steps});
  auto trace = telemetry::analyze_kineto_trace(text);
  if (!trace.is_ok()) {
    TY_CHECK(!trace.status().message().empty());
    return 0;
  }
  // Sums of nanosecond integers converted once: exact up to rounding of the final division.
  constexpr double kSlack = 1e-3;
  for (const auto& d : trace->devices) {
    TY_CHECK(d.busy_us <= d.span_us + kSlack);
    TY_CHECK(d.idle_us >= -kSlack);
    TY_CHECK(d.compute_us <= d.busy_us + kSlack);
    TY_CHECK(d.overlap_us <= d.compute_us + kSlack && d.overlap_us <= d.communication_us + kSlack);
    TY_CHECK(d.launch.short_kernels <= d.launch.kernels);
    for (const auto& s : d.streams) {
      TY_CHECK(s.idle_us + kSlack >= s.host_wait_us + s.kernel_wait_us + s.other_us - kSlack);
    }
  }
  if (trace->data_loader_share) TY_CHECK(*trace->data_loader_share >= 0);
  (void)telemetry::format_trace_report(*trace);
  (void)telemetry::to_json(*trace).dump();
  return 0;
}
