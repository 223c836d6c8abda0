// What `trainyard top` shows of a GPU process on this machine: its user and command line, read
// from /proc; and the workers a local wrapper started (its children), which are the processes
// that hold GPUs, so that simulated GPUs report the same pids NVML would.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainyard::server {

struct ProcessInfo {
  std::string user;     // passwd name, else the uid in digits
  std::string command;  // argv joined by spaces, at most kMaxCommandBytes
};

inline constexpr size_t kMaxCommandBytes = 512;

// nullopt when the process is gone (or /proc hides it).
std::optional<ProcessInfo> describe_local_process(int pid);
// The direct children of `pid` (/proc/<pid>/task/<pid>/children); empty when it has none yet or
// the kernel does not list children.
std::vector<int> child_processes(int pid);

}  // namespace trainyard::server
