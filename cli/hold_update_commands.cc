// Slurm's job controls: `trainyard hold JOB...` keeps pending jobs from starting until
// `trainyard release JOB...`, and `trainyard update JOB --priority high` changes a pending job's
// priority class (scontrol hold/release/update). Each is one API call per job (docs/api.md).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/api_calls.h"
#include "cli/client.h"
#include "cli/job_lookup.h"
#include "cli/output.h"

namespace trainyard::cli {
namespace {

// Runs `action` (the API path after /api/v1/jobs/{id}/) on every job named in `refs` and prints
// `done` for each; returns the exit code of the last failure, or 0.
int for_each_job(ApiClient& api, const std::vector<std::string>& refs, const std::string& verb,
                 const std::string& action, const std::string& body,
                 const std::function<std::string(const model::JobView&)>& done) {
  int rc = kExitOk;
  for (const auto& ref : refs) {
    auto id = resolve_job(api, ref);
    if (!id.is_ok()) {
      rc = report(verb, id.status());
      continue;
    }
    auto r = post_view<model::JobView>(api, fmt::format("/api/v1/jobs/{}/{}", *id, action), body);
    if (!r.is_ok()) {
      rc = report(verb, r.status());
      if (rc == kExitUnreachable) return rc;
      continue;
    }
    std::cout << fmt::format("job {} {}\n", *id, done(*r));
  }
  return rc;
}

Runner add_hold(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::vector<std::string> jobs;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "hold", "Keep pending jobs from starting until `trainyard release` (running jobs: refused)");
  cmd->add_option("jobs", o->jobs, "Job ids or names")->required();
  add_client_options(*cmd, o->client);
  return [o] {
    ApiClient api(o->client);
    return for_each_job(api, o->jobs, "hold", "hold", "{}",
                        [](const model::JobView&) { return std::string("held"); });
  };
}

Runner add_release(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::vector<std::string> jobs;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("release", "Let held jobs be scheduled again (see `trainyard hold`)");
  cmd->add_option("jobs", o->jobs, "Job ids or names")->required();
  add_client_options(*cmd, o->client);
  return [o] {
    ApiClient api(o->client);
    return for_each_job(api, o->jobs, "release", "release", "{}",
                        [](const model::JobView&) { return std::string("released"); });
  };
}

Runner add_update(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::vector<std::string> jobs;
    std::string priority;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "update", "Change pending jobs: update JOB --priority high (used from the next cycle)");
  cmd->add_option("jobs", o->jobs, "Job ids or names")->required();
  cmd->add_option("--priority", o->priority, "New priority class: low, normal or high")->required();
  add_client_options(*cmd, o->client);
  return [o] {
    if (o->priority != "low" && o->priority != "normal" && o->priority != "high")
      return report("update",
                    util::invalid_argument(fmt::format(
                        "--priority must be low, normal or high, got '{}'", o->priority)));
    ApiClient api(o->client);
    const std::string body = nlohmann::json{{"priorityClass", o->priority}}.dump();
    return for_each_job(api, o->jobs, "update", "update", body, [o](const model::JobView& j) {
      return fmt::format("priority class {} (priority {})", o->priority, j.priority);
    });
  };
}

}  // namespace

void add_hold_update_commands(CLI::App& app, std::map<std::string, Runner>& runners) {
  runners["hold"] = add_hold(app);
  runners["release"] = add_release(app);
  runners["update"] = add_update(app);
}

}  // namespace trainyard::cli
