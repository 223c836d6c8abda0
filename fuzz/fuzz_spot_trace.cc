// Feeds arbitrary bytes to the spot trace readers (SkyPilot JSON; Bamboo event logs, GCP traces
// and doc-data series; the content sniffing of parse_spot_trace). Each must
// return a SpotTrace or a Status; an accepted trace must be well formed for simcloud's replay
// (positive period, steps sorted from 0, reclaims sorted inside one pass).
#include <cstddef>
#include <cstdint>
#include <string>

#include "cloud/spot_trace.h"
#include "util/status.h"

namespace {

using namespace trainyard;

void check_trace(const cloud::SpotTrace& t) {
  TY_CHECK(t.period > util::Duration::zero());
  TY_CHECK(!t.capacity.empty() && t.capacity.front().offset == util::Duration::zero());
  for (size_t i = 0; i < t.capacity.size(); ++i) {
    TY_CHECK(t.capacity[i].capacity >= 0);
    TY_CHECK(t.capacity[i].offset < t.period);
    if (i > 0) TY_CHECK(t.capacity[i - 1].offset < t.capacity[i].offset);
  }
  for (size_t i = 0; i < t.reclaims.size(); ++i) {
    const cloud::Reclaim& r = t.reclaims[i];
    TY_CHECK(r.nodes >= 1);
    TY_CHECK(r.offset >= util::Duration::zero() && r.offset < t.period);
    if (i > 0) TY_CHECK(t.reclaims[i - 1].offset < r.offset);
    // A reclaim is a fall of the capacity: after it, the trace shows fewer nodes.
    TY_CHECK(t.capacity_at(r.offset) == 0 || !r.to_zero);
  }
  // Offsets past the end loop back.
  TY_CHECK(t.capacity_at(t.period) == t.capacity_at(util::Duration::zero()));
  (void)t.capacity_at(util::Duration(-1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto json = cloud::parse_skypilot_trace(text, "fuzz.json");
  if (json.is_ok()) check_trace(*json);
  auto csv = cloud::parse_bamboo_trace(text, "fuzz.csv");
  if (csv.is_ok()) check_trace(*csv);
  auto gcp = cloud::parse_bamboo_gcp_trace(text, "fuzz.txt");
  if (gcp.is_ok()) check_trace(*gcp);
  auto series = cloud::parse_bamboo_series_trace(text, "fuzz.csv");
  if (series.is_ok()) check_trace(*series);
  auto any = cloud::parse_spot_trace(text, "fuzz");
  if (any.is_ok()) check_trace(*any);
  return 0;
}
