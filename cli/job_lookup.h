// Resolving what a user calls a job on the command line: a numeric id, or a name (the newest
// job with that name the token may see).
#pragma once

#include <string>

#include "cli/client.h"
#include "cli/commands.h"
#include "model/api_views.h"

namespace trainyard::cli {

util::Result<int64_t> resolve_job(ApiClient& api, const std::string& ref);

// Defined in their own files; registered by add_job_commands().
Runner add_run_command(CLI::App& app);
Runner add_show_command(CLI::App& app);
Runner add_logs_command(CLI::App& app);
Runner add_checkpoints_command(CLI::App& app);
void add_job_commands(CLI::App& app, std::map<std::string, Runner>& runners);
Runner add_wait_command(CLI::App& app);  // wait_command.cc
// "&tailLines=N&sinceSeconds=S" (or sinceTime) for logs --tail/--since (log_window.cc);
// InvalidArgument naming the option for a bad --since.
util::Result<std::string> log_window_query(const std::string& since, int64_t tail);
// Prints jobs as `ls` does for -o `output` (job_commands.cc); `raw` is the server's JSON of the
// same jobs, printed as is for -o json and -o yaml.
int print_job_list(const std::vector<model::JobView>& jobs, const nlohmann::json& raw,
                   const std::string& output);
// `ls --watch` of GET `query` (ls_watch.cc); returns when interrupted, 0.
int watch_jobs(ApiClient& api, const std::string& query, const std::string& output);
// hold, release and update (hold_update_commands.cc).
void add_hold_update_commands(CLI::App& app, std::map<std::string, Runner>& runners);
void add_cluster_commands(CLI::App& app, std::map<std::string, Runner>& runners);

}  // namespace trainyard::cli
