// The files a worker's wrapper leaves in its run dir (pid, exit_status, preempt_notice) and the
// /proc facts that guard against pid reuse. Shared by the local executor and the wrapper, so both
// sides agree on the formats. Linux only. Internal to exec/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "exec/executor.h"
#include "util/status.h"

namespace trainyard::exec::internal {

// Files in a run dir are readable by the worker's team only: mode 0640 and, when this process
// is root, the group of the directory (the team's group; the control plane sets it).
inline constexpr unsigned kRunFileMode = 0640;

// Writes `content` through a temporary file and a rename, so readers see all of it or nothing.
// With `durable`, the file and its directory are fsync'ed before this returns. The file gets
// kRunFileMode (whatever the umask) and the group of its directory.
util::Status write_file_atomically(const std::filesystem::path& path, std::string_view content,
                                   bool durable);

// Gives the open file `fd` kRunFileMode and, as root, the group of directory `dir`.
void set_run_file_access(int fd, const std::filesystem::path& dir);

struct ProcStat {
  char state = '?';  // 'R', 'S', 'Z' (zombie: exited, not yet reaped), ...
  int64_t start_ticks = 0;
};
// /proc/<pid>/stat; nullopt when no such process exists.
std::optional<ProcStat> read_proc_stat(int pid);

std::string format_pid_file(const ProcessRef& ref);  // "<pid> <start_ticks>\n"
// NotFound without a pid file; InvalidArgument when it is malformed.
util::Result<ProcessRef> read_pid_file(const std::filesystem::path& run_dir);

// "exited <code>\n" or "signaled <sig>\n".
std::string format_exit_status(ExitKind kind, int code);
// nullopt when the run dir has no complete exit_status file.
std::optional<ProcessStatus> read_exit_status(const std::filesystem::path& run_dir);
// Absolute paths (the worker changes directory), the run dir prepared (root's, with the
// worker's own work and tmp dirs and metrics file), and stale files of an earlier launch in the
// same run dir removed so they cannot be mistaken for this one's.
util::Result<WorkerLaunch> prepare_worker(const WorkerLaunch& in);

// Human-readable outcome: "exited with code 3", "killed by SIGKILL".
std::string describe_exit(ExitKind kind, int code);

}  // namespace trainyard::exec::internal
