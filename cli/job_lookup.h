// Resolving what a user calls a job on the command line: a numeric id, or a name (the newest
// job with that name the token may see).
#pragma once

#include <string>

#include "cli/client.h"
#include "cli/commands.h"

namespace trainyard::cli {

util::Result<int64_t> resolve_job(ApiClient& api, const std::string& ref);

// Defined in their own files; registered by add_job_commands().
Runner add_run_command(CLI::App& app);
Runner add_show_command(CLI::App& app);
Runner add_logs_command(CLI::App& app);
Runner add_checkpoints_command(CLI::App& app);
void add_job_commands(CLI::App& app, std::map<std::string, Runner>& runners);
// hold, release and update (hold_update_commands.cc).
void add_hold_update_commands(CLI::App& app, std::map<std::string, Runner>& runners);
void add_cluster_commands(CLI::App& app, std::map<std::string, Runner>& runners);

}  // namespace trainyard::cli
