// The wrapper's command line and the complete environment of a worker. Built before fork(),
// because between fork and exec in the multi-threaded server only async-signal-safe calls may
// run: no allocation, no locks. Internal to exec/.
#pragma once

#include <string>
#include <vector>

#include "exec/executor.h"
#include "util/status.h"

namespace trainyard::exec::internal {

// Refuses what a process cannot be given: an empty argv, NUL bytes, env names with '='.
util::Status validate_launch(const WorkerLaunch& w);

// `<wrapper_path> __exec-wrapper --run-dir D --log-cap N --cwd W -- argv...`; W is run_dir when
// w.working_dir is empty.
std::vector<std::string> wrapper_argv(const std::string& wrapper_path, const WorkerLaunch& w);

// "NAME=value" entries: the server's environment `base` (environ) without CUDA_VISIBLE_DEVICES,
// then the user's env, then trainyard's variables (TRAINYARD_*, among them
// TRAINYARD_METRICS_FILE = run_dir/kMetricsFile; CUDA_VISIBLE_DEVICES, WORLD_SIZE, RANK,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT when set); a later name replaces an earlier one.
// A worker without GPUs gets CUDA_VISIBLE_DEVICES="" so that CUDA shows it none.
std::vector<std::string> worker_environment(const WorkerLaunch& w, char** base);

// Pointers into `strings`, ending in nullptr, as execve wants; valid while `strings` is unchanged.
std::vector<char*> c_string_array(std::vector<std::string>& strings);

}  // namespace trainyard::exec::internal
