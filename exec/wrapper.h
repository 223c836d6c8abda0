// The process that sits between a job worker and the server: `trainyard __exec-wrapper
// --run-dir D --log-cap N [--cwd W] [--checkpoint-dir C] [--uid U --gid G --groups ...]
// [--env-fd F] -- argv...`. It starts its own session (so its pid is the group id), writes
// D/pid, runs argv with stdout+stderr piped into D/output.log (capped at N bytes, then a
// truncation line), ignores the notice signal itself but forwards nothing (the server signals
// the whole group), and writes D/exit_status atomically when the worker ends. The wrapper keeps
// the server's user (root, when workers are isolated); only the forked worker becomes U:G, and
// gets the environment read from fd F (the wrapper's own comes from the server, not the spec).
#pragma once

namespace trainyard::exec {

inline constexpr const char* kWrapperSubcommand = "__exec-wrapper";

// argv[0] is the binary, argv[1] == kWrapperSubcommand. Returns the worker's exit code (or
// 128 + signal), or 127 when it could not start.
int wrapper_main(int argc, char** argv);

}  // namespace trainyard::exec
