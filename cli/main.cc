// trainyard: a GPU workload manager for ML training. Subcommands are defined in commands.h.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/job_lookup.h"
#include "exec/wrapper.h"
#include "util/log.h"

namespace {

// The path of this binary, so the server can start workers under `trainyard __exec-wrapper`.
std::string self_path(const char* argv0) {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) return p.string();
  return std::filesystem::absolute(argv0, ec).string();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trainyard::cli;
  if (argc > 1 && std::string_view(argv[1]) == trainyard::exec::kWrapperSubcommand) {
    return trainyard::exec::wrapper_main(argc, argv);
  }
  CLI::App app{"trainyard: schedules, runs and simulates ML training jobs on GPUs", "trainyard"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trainyard 0.1.0");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  std::map<std::string, Runner> runners;
  runners["simulate"] = add_simulate_command(app);
  runners["server"] = add_server_command(app, self_path(argv[0]));
  runners["top"] = add_top_command(app);
  runners["doctor"] = add_doctor_command(app);
  runners["alerts"] = add_alerts_command(app);
  runners["cost"] = add_cost_command(app);
  add_job_commands(app, runners);
  add_cluster_commands(app, runners);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  }
  if (!trainyard::util::set_log_level(log_level)) {
    std::fprintf(stderr, "trainyard: unknown --log-level '%s'\n", log_level.c_str());
    return kExitBadInput;
  }
  for (const auto& [name, run] : runners) {
    if (app.got_subcommand(name)) return run();
  }
  return kExitBadInput;
}
