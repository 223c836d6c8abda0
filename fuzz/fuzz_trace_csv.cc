// Feeds arbitrary bytes to every trace adapter, the format guesser, finalize(), the Alibaba node
// reader and the generic CSV writer. Adapters must turn any input into a Workload or a Status;
// a crash, a sanitizer report or a broken invariant below is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/workload.h"
#include "util/status.h"

namespace {

using namespace trainyard;

// What finalize() promises: ids 1..n, submit times from 0 in order, positive durations,
// dependencies on earlier jobs only.
void check_workload(const sim::Workload& w) {
  int64_t expected_id = 1;
  util::Time last = util::kEpoch;
  for (const sim::TraceJob& j : w.jobs) {
    TY_CHECK(j.id == util::JobId(expected_id++));
    TY_CHECK(j.submit >= last);
    last = j.submit;
    TY_CHECK(j.duration.count() > 0);
    TY_CHECK(j.spec.workers >= 1);
    for (util::JobId d : j.spec.depends_on) TY_CHECK(d < j.id && d.value() >= 1);
  }
}

// A workload written by format_csv_trace loads back with the same jobs.
void check_round_trip(const sim::Workload& w) {
  const std::string text = sim::format_csv_trace(w);
  auto again = sim::load_trace_from_text("csv", text, "roundtrip.csv", {});
  TY_CHECK_MSG(again.is_ok(), again.status().message());
  TY_CHECK(again->jobs.size() == w.jobs.size());
  TY_CHECK(sim::format_csv_trace(*again) == text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const bool skip : {false, true}) {
    const sim::TraceOptions opts{.skip_bad_rows = skip};
    std::vector<std::string> formats = sim::trace_formats();
    formats.push_back("auto");
    for (const std::string& format : formats) {
      auto w = sim::load_trace_from_text(format, text, "fuzz.csv", opts);
      if (!w.is_ok()) continue;
      check_workload(*w);
      check_round_trip(*w);
    }
  }
  auto nodes = sim::load_alibaba_nodes_from_text(text, "fuzz.csv");
  if (nodes.is_ok()) {
    for (size_t i = 0; i < nodes->size(); ++i) {
      TY_CHECK((*nodes)[i].id == util::NodeId(static_cast<int64_t>(i) + 1));
    }
  }
  return 0;
}
