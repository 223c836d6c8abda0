// `cancel -l SELECTOR` and `cancel --all` (job_commands.cc): every unfinished job matching a
// label selector, or every one the token may see (asking first on a terminal, refusing without
// --yes otherwise). Prints one line per job it cancelled.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/client.h"

namespace trainyard::cli {

struct CancelSelection {
  std::string selector;
  bool all = false, yes = false;
};

void add_cancel_selection_options(CLI::App& cmd, CancelSelection& s);
// The exit code of cancelling the selection, or -1 when there is none and `jobs_named` (the
// caller cancels the jobs named on the command line).
int cancel_selected(const ClientOptions& client, const CancelSelection& s, bool jobs_named);

}  // namespace trainyard::cli
