// The columns of trainyard's generic CSV trace, shared by its reader (csv.cc) and writer
// (csv_writer.cc) so the two cannot drift apart. The writer emits them in this order.
#pragma once

#include <array>
#include <string_view>

namespace trainyard::sim {

enum CsvColumn : int {
  kId,
  kName,
  kSubmitTime,
  kDuration,
  kWorkers,
  kGpus,
  kGpuMilli,
  kMigProfile,
  kCpu,
  kMemory,
  kTeam,
  kPriority,
  kGpuModel,
  kRuntimeLimit,
  kPreemptible,
  kCheckpointInterval,
  kDependsOn,
  kCsvColumnCount,
};

inline constexpr std::array<std::string_view, kCsvColumnCount> kCsvColumns = {
    "id",         "name",          "submit_time", "duration",
    "workers",    "gpus",          "gpu_milli",   "mig_profile",
    "cpu",        "memory",        "team",        "priority",
    "gpu_model",  "runtime_limit", "preemptible", "checkpoint_interval",
    "depends_on",
};

}  // namespace trainyard::sim
