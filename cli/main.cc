// trainyard: a GPU workload manager for ML training. Subcommands are defined in commands.h.
#include <cstdio>

#include "cli/commands.h"
#include "util/log.h"

int main(int argc, char** argv) {
  CLI::App app{"trainyard: schedules, runs and simulates ML training jobs on GPUs", "trainyard"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trainyard 0.1.0");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  trainyard::cli::Runner simulate = trainyard::cli::add_simulate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : trainyard::cli::kExitBadInput;
  }
  if (!trainyard::util::set_log_level(log_level)) {
    std::fprintf(stderr, "trainyard: unknown --log-level '%s'\n", log_level.c_str());
    return trainyard::cli::kExitBadInput;
  }
  if (app.got_subcommand("simulate")) return simulate();
  return trainyard::cli::kExitBadInput;
}
