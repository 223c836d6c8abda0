// Recorded spot availability and reclaims, for simcloud to replay instead of its seeded Poisson
// process: SkyPilot's "Can't Be Late" preemption/availability probes (JSON count series),
// Bamboo's cluster event logs (CSV add/remove rows) and Bamboo's count series (GCP logs and the
// doc-data step series). Offsets are from the trace's start; the format is told by content.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::cloud {

// From `offset` on, the trace shows `capacity` spot nodes obtainable.
struct CapacityStep {
  util::Duration offset{0};
  int capacity = 0;
  bool operator==(const CapacityStep&) const = default;
};

// At `offset` the provider took `nodes` nodes back. `to_zero` marks a drop to no capacity at
// all: then every live node of the zone goes, whatever `nodes` says.
struct Reclaim {
  util::Duration offset{0};
  int nodes = 1;
  bool to_zero = false;
  bool operator==(const Reclaim&) const = default;
};

struct SpotTrace {
  std::string source;  // file (or caller's name) for messages
  // Length of one pass. Replays loop: offset o and o + k × period look the same.
  util::Duration period{0};
  std::vector<CapacityStep> capacity;  // sorted by offset, the first at 0
  std::vector<Reclaim> reclaims;       // sorted by offset, all in [0, period)

  // Capacity at `offset` (any non-negative offset; the trace loops).
  int capacity_at(util::Duration offset) const;
};

// SkyPilot spot-traces JSON: {"metadata": {"gap_seconds": N}, "data": [count, ...]}; sample i
// covers [i × N, (i + 1) × N) s. A fall of the count is a reclaim of that many nodes.
util::Result<SpotTrace> parse_skypilot_trace(std::string_view json, std::string_view source);
// Bamboo event log: rows "time_ms,event,node" with event add or remove (an optional header row
// "time_ms,..." is skipped). Each remove reclaims one node. The log lasts until its last event
// plus the smallest gap between its event times (Bamboo logs sit on a one-minute grid).
util::Result<SpotTrace> parse_bamboo_trace(std::string_view csv, std::string_view source);
// Count series: from a row's time on, `count` spot nodes are obtainable; a fall of the count is
// a reclaim of that many nodes (rows at one time collapse to the last). Each lasts until its
// last row plus the smallest gap between its row times (60 s when all rows share one time).
//
// Bamboo GCP trace (uclasystem/bamboo traces/gcloud/*.txt): rows "YYYY-MM-DD, HH:MM:SS, count",
// spaces after the commas optional, an optional header row; times relative to the first row.
util::Result<SpotTrace> parse_bamboo_gcp_trace(std::string_view csv, std::string_view source);
// Bamboo doc-data series (doc/data/*.csv): rows "hours,count" with hours written as a decimal
// ("0.030,9", the *_scaled files), or "seconds,count" in whole seconds (the others). A header
// row "hours,..." or "seconds,..." names the unit; without one, a time with a decimal point
// anywhere in the file means hours and whole numbers only mean seconds.
util::Result<SpotTrace> parse_bamboo_series_trace(std::string_view csv, std::string_view source);
// Any of the above, told apart by content: '{' opens SkyPilot JSON; otherwise the first CSV
// data row decides (time_ms,add|remove,node; a YYYY-MM-DD date and two more fields; two
// fields). Errors say which formats were expected.
util::Result<SpotTrace> parse_spot_trace(std::string_view text, std::string_view source);
// Reads a file with parse_spot_trace, whatever its extension. Errors name the file.
util::Result<SpotTrace> load_spot_trace(const std::filesystem::path& path);
// Every *.json in a SkyPilot folder (e.g. preemption/1-node/aws-04-22-2023), keyed by the zone
// the file name starts with ("us-west-2b_v100_1.json" → "us-west-2b").
util::Result<std::map<std::string, SpotTrace>> load_skypilot_zone_traces(
    const std::filesystem::path& dir);

}  // namespace trainyard::cloud
