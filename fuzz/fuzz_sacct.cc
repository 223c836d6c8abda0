// Feeds arbitrary bytes to the sacct adapter and its field readers. It must return a Workload
// or a Status for any input; a crash, a sanitizer report or a broken invariant below is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/traces/sacct_fields.h"
#include "sim/workload.h"
#include "util/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainyard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const bool skip : {false, true}) {
    const sim::TraceOptions opts{.skip_bad_rows = skip};
    auto w = sim::load_trace_from_text("sacct", text, "fuzz.txt", opts);
    if (!w.is_ok()) continue;
    int64_t id = 1;
    for (const sim::TraceJob& j : w->jobs) {
      TY_CHECK(j.id == util::JobId(id++));
      TY_CHECK(j.duration.count() > 0);
      TY_CHECK(j.spec.workers >= 1);
      TY_CHECK(j.spec.worker.gpus >= 1 && j.spec.worker.gpus <= 16);
    }
  }
  // The field readers alone, on the whole input.
  (void)sim::parse_sacct_time(text);
  (void)sim::parse_slurm_timelimit(text);
  (void)sim::parse_tres_gpus(text);
  return 0;
}
