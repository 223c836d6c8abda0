// The trainyard command's subcommands. Each registers its options on the CLI11 app and
// returns the process exit code when run: 0 success, 1 a failure while running, 2 bad usage
// or bad input (a message on stderr says what and where).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace trainyard::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

using Runner = std::function<int()>;

Runner add_simulate_command(CLI::App& app);

}  // namespace trainyard::cli
