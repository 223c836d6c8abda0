// trainyard: a GPU workload manager for ML training. Subcommands are defined in commands.h.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/job_lookup.h"
#include "cli/telemetry_view.h"
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

// Edit distance, for "did you mean".
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The command a user of kubectl or Slurm most likely meant by `word`, or "" if none is close.
std::string suggestion(const std::string& word, const std::vector<std::string>& commands) {
  static const std::pair<const char*, const char*> kHabits[] = {
      {"describe", "show"}, {"get", "ls"},        {"list", "ls"},       {"ps", "ls"},
      {"squeue", "ls"},     {"sinfo", "nodes"},   {"delete", "cancel"}, {"scancel", "cancel"},
      {"kill", "cancel"},   {"sbatch", "submit"}, {"apply", "submit"},  {"create", "submit"},
      {"srun", "run"},      {"sacct", "ls"},      {"log", "logs"},      {"status", "show"}};
  for (const auto& [habit, command] : kHabits) {
    if (word == habit && std::find(commands.begin(), commands.end(), command) != commands.end())
      return command;
  }
  std::string best;
  size_t best_d = 3;  // at most two edits away
  for (const std::string& c : commands) {
    const size_t d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// The subcommand named on the command line, if any (for error prefixes).
std::string subcommand_of(int argc, char** argv, const std::vector<std::string>& commands) {
  for (int i = 1; i < argc; ++i) {
    if (std::find(commands.begin(), commands.end(), argv[i]) != commands.end()) return argv[i];
  }
  return "";
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
  runners["telemetry"] = add_telemetry_command(app);
  runners["doctor"] = add_doctor_command(app);
  runners["alerts"] = add_alerts_command(app);
  runners["cost"] = add_cost_command(app);
  runners["completion"] = add_completion_command(app);
  add_job_commands(app, runners);
  add_cluster_commands(app, runners);
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_name().empty() && sub->get_name().front() != '_') {
      commands.push_back(sub->get_name());
    }
  }
  // An unknown verb: say which, and what the user probably meant (kubectl and Slurm habits).
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--log-level") {
      ++i;
      continue;
    }
    if (arg.starts_with("-")) continue;
    if (std::find(commands.begin(), commands.end(), arg) != commands.end()) break;
    const std::string guess = suggestion(std::string(arg), commands);
    std::string all;
    for (const std::string& c : commands) all += (all.empty() ? "" : ", ") + c;
    std::fprintf(stderr, "trainyard: unknown command '%s'%s\ncommands: %s (trainyard --help)\n",
                 std::string(arg).c_str(),
                 guess.empty() ? "" : ("; did you mean '" + guess + "'?").c_str(), all.c_str());
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every error starts with "trainyard <verb>:", as the commands' own errors do.
    const std::string verb = subcommand_of(argc, argv, commands);
    const std::string who = verb.empty() ? "trainyard" : "trainyard " + verb;
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for more information.\n", who.c_str(), e.what(),
                 who.c_str());
    return kExitBadInput;
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
