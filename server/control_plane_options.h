// What a control plane is opened with, and the log read API's request and reply types.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "exec/slurm_executor.h"
#include "server/batch_gpu_sampler.h"
#include "server/config.h"
#include "util/clock.h"

namespace trainyard::server {

struct ControlPlaneOptions {
  std::filesystem::path state_dir;  // jobs/<id>/attempt-<n>/rank-<r>/, checkpoints/<id>/
  std::filesystem::path db_path;    // empty = state_dir/state.db
  ServerConfig config;
  // Run each team's workers as its own user (config.workers). nullopt: when this process is
  // root, the only case in which it can.
  std::optional<bool> isolate_workers;
  // Where jobs/ (run dirs, logs) and checkpoints/ live; empty = state_dir. The Slurm executor's
  // shared directory, so every node reaches them.
  std::filesystem::path work_dir;
  // The executor when it is a Slurm cluster's: nodes come from it and refresh every cycle.
  exec::SlurmExecutor* slurm = nullptr;
  // With `slurm`: the sampler that reads the wrappers' GPU readings, told who runs where after
  // every cycle (record_telemetry_from() makes the recorder use it).
  BatchGpuSampler* batch_sampler = nullptr;
};

// Which part of a log to read (`logs --since/--tail`): lines that arrived at `since_time`, or
// in the last `since_seconds` (-1: no limit), then of those the last `tail_lines` (-1: all).
struct LogWindow {
  std::optional<util::Time> since_time;
  int64_t since_seconds = -1;
  int64_t tail_lines = -1;
};

struct LogChunk {
  std::string data;
  int64_t next_offset = 0;
  bool complete = false;  // the attempt has ended and everything was read
};

}  // namespace trainyard::server
