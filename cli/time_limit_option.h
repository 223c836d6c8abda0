// `run -t/--time`: the job's runtime limit as sbatch --time takes it (or 2h, 90m, 3600s), sent
// as the spec's activeDeadlineSeconds; the server stops an attempt that runs past it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "util/status.h"

namespace trainyard::cli {

void add_time_limit_option(CLI::App& cmd, std::string& text);
// Sets spec["activeDeadlineSeconds"] when `text` is not empty; InvalidArgument naming --time
// and the accepted forms for text that is not a time limit.
util::Status apply_time_limit(const std::string& text, nlohmann::json& spec);

}  // namespace trainyard::cli
