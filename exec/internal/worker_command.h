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

// The fd number on which the wrapper finds the worker's environment (see env_block()).
inline constexpr int kEnvFd = 3;

// `<wrapper_path> __exec-wrapper --run-dir D --log-cap N --cwd W [--checkpoint-dir C]
// [--uid U --gid G --groups G1,G2] --env-fd 3 -- argv...`; W is run_dir/kWorkDir when
// w.working_dir is empty. --run-dir stays first: scripts find a server's wrappers by it.
std::vector<std::string> wrapper_argv(const std::string& wrapper_path, const WorkerLaunch& w);

// "NAME=value" entries: the server's environment `base` (environ) without CUDA_VISIBLE_DEVICES
// and TRAINYARD_TOKEN (the operator's token is not the job's), then TMPDIR = run_dir/kTmpDir and,
// with w.run_as, USER, LOGNAME and HOME, then the user's env, then trainyard's variables
// (TRAINYARD_*, among them TRAINYARD_METRICS_FILE = run_dir/kMetricsFile; CUDA_VISIBLE_DEVICES,
// WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT when set); a later name replaces an
// earlier one. A worker without GPUs gets CUDA_VISIBLE_DEVICES="" so that CUDA shows it none.
std::vector<std::string> worker_environment(const WorkerLaunch& w, char** base);

// The wrapper's own environment: a fixed PATH and the sanitizer options of `base`, nothing a
// spec can set. The wrapper may run as root, so a spec's LD_PRELOAD, GCONV_PATH or
// GLIBC_TUNABLES must never reach it; the worker's environment travels in env_block() instead.
std::vector<std::string> wrapper_environment(char** base);

// The entries one after another, each ending in NUL: what the wrapper reads from kEnvFd.
std::string env_block(const std::vector<std::string>& entries);
// The inverse of env_block(); a last entry without its NUL is kept.
std::vector<std::string> parse_env_block(std::string_view block);

// Pointers into `strings`, ending in nullptr, as execve wants; valid while `strings` is unchanged.
std::vector<char*> c_string_array(std::vector<std::string>& strings);

}  // namespace trainyard::exec::internal
