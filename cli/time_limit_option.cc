#include "cli/time_limit_option.h"

#include "model/time_limit.h"

namespace trainyard::cli {

void add_time_limit_option(CLI::App& cmd, std::string& text) {
  cmd.add_option("-t,--time", text,
                 "Runtime limit of each attempt (activeDeadlineSeconds), as sbatch --time: 90 "
                 "(minutes), 30:00, 2:00:00, 1-12:00:00, or 2h, 90m, 3600s; the job is stopped "
                 "when it runs longer, and the scheduler plans start times with it");
}

util::Status apply_time_limit(const std::string& text, nlohmann::json& spec) {
  if (text.empty()) return util::Status::ok();
  auto limit = model::parse_time_limit(text);
  if (!limit.is_ok()) return util::invalid_argument("--time: " + limit.status().message());
  spec["activeDeadlineSeconds"] = std::chrono::duration_cast<std::chrono::seconds>(*limit).count();
  return util::Status::ok();
}

}  // namespace trainyard::cli
