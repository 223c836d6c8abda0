// Runs a short-lived command (Slurm's sbatch, squeue, scancel, ...) and collects what it printed,
// with a deadline: a command that hangs (a controller that does not answer) is killed and
// reported, never waited for forever. Safe in a multi-threaded process: everything the child
// needs is built before fork(), and the child only calls async-signal-safe functions.
#pragma once

#include <string>
#include <vector>

#include "util/clock.h"
#include "util/status.h"

namespace trainyard::exec {

struct CommandResult {
  int exit_code = 0;  // 128 + signal when killed by one
  std::string out;    // standard output
  std::string err;    // standard error
  bool timed_out = false;
};

struct CommandOptions {
  // The complete environment ("NAME=value"); empty = inherit this process's environment.
  std::vector<std::string> env;
  util::Duration timeout = std::chrono::seconds(30);
};

// Runs argv[0] (looked up in PATH) with argv. An error only when it could not be run at all
// (no such program, fork failed); a non-zero exit or a time-out is a CommandResult.
util::Result<CommandResult> run_command(const std::vector<std::string>& argv,
                                        const CommandOptions& options = {});

}  // namespace trainyard::exec
