// The trainyard command's subcommands. Each registers its options on the CLI11 app and
// returns the process exit code when run: 0 success, 1 a failure while running, 2 bad usage
// or bad input, 3 no such job, 4 refused (token missing, wrong or of another team), 5 the
// server cannot be reached, 6 timed out (`wait`). A message on stderr says what and where.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>

namespace trainyard::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitNotFound = 3;
inline constexpr int kExitRefused = 4;
inline constexpr int kExitUnreachable = 5;
inline constexpr int kExitTimedOut = 6;

using Runner = std::function<int()>;

Runner add_simulate_command(CLI::App& app);
Runner add_server_command(CLI::App& app, const std::string& self_path);
Runner add_top_command(CLI::App& app);
Runner add_doctor_command(CLI::App& app);  // doctor_command.cc
Runner add_alerts_command(CLI::App& app);  // alerts_command.cc
Runner add_cost_command(CLI::App& app);    // cost_command.cc
// `completion bash|zsh` (completion_command.cc): reads `app`'s commands when it runs.
Runner add_completion_command(CLI::App& app);

}  // namespace trainyard::cli
