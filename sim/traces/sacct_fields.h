// Field readers for Slurm accounting output (`sacct --parsable2`): time stamps, time limits,
// TRES lists and job ids. Pure; errors carry no location (the adapter adds file:line:column).
// Internal to sim/traces/sacct.cc and its tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace trainyard::sim {

// "2024-01-02T03:04:05" (or with a space for 'T'; read as UTC, as the trace gives no zone) ->
// seconds since the epoch. "Unknown", "None" and "" (a job that has not started or ended) ->
// nullopt.
util::Result<std::optional<int64_t>> parse_sacct_time(std::string_view text);

// A Slurm time limit: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS" -> seconds (> 0).
// "UNLIMITED", "INFINITE", "Partition_Limit" and "" -> nullopt (no limit of the job's own).
util::Result<std::optional<int64_t>> parse_slurm_timelimit(std::string_view text);

// GPUs in a TRES list ("billing=8,cpu=16,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=1"): the
// untyped gres/gpu count, else the sum of the typed ones. `type` is the GRES type when the
// typed entries name exactly one.
struct TresGpus {
  int64_t count = 0;
  std::string type;
};
util::Result<TresGpus> parse_tres_gpus(std::string_view tres);

// The state's first word without sacct's truncation mark: "CANCELLED by 123" -> "CANCELLED".
std::string_view sacct_state_word(std::string_view state);

}  // namespace trainyard::sim
