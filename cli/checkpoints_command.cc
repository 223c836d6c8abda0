// `trainyard checkpoints JOB`: the job's checkpoints (newest first), each verified against its
// manifest (sizes and SHA-256; docs/job-contract.md), so a user sees which one a resume loads.
#include <iostream>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/job_lookup.h"
#include "cli/list_output.h"
#include "cli/output.h"
#include "model/api_job_health_views.h"

namespace trainyard::cli {

Runner add_checkpoints_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string job, output;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "checkpoints", "List a job's checkpoints with step, size, age and whether they verify");
  cmd->add_option("job", o->job, "Job id or name")->required();
  cmd->add_option("-o,--output", o->output, kListOutputHelp);
  add_client_options(*cmd, o->client);
  return [o] {
    if (auto st = check_list_output(o->output); !st.is_ok()) return report("checkpoints", st);
    ApiClient api(o->client);
    auto id = resolve_job(api, o->job);
    if (!id.is_ok()) return report("checkpoints", id.status());
    auto r =
        get_reply<model::CheckpointListView>(api, fmt::format("/api/v1/jobs/{}/checkpoints", *id));
    if (!r.is_ok()) return report("checkpoints", r.status());
    if (o->output == "name") {
      for (const auto& c : r->view.items) std::cout << "checkpoint/" << c.step << "\n";
      return kExitOk;
    }
    if (print_structured(r->raw, o->output)) return kExitOk;
    const bool wide = o->output == "wide";
    std::cout << "dir: " << r->view.dir << "\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : r->view.items) {
      rows.push_back({std::to_string(c.step),
                      fmt::format("{:.1f}", static_cast<double>(c.bytes) / (1 << 20)),
                      age_of(std::optional(c.created)), c.verified ? "yes" : "no",
                      c.problem.empty() ? "-" : c.problem});
      if (wide) rows.back().push_back(c.path);
    }
    std::vector<std::string> header = {"STEP", "MIB", "AGE", "VERIFIED", "PROBLEM"};
    if (wide) header.push_back("PATH");
    std::cout << render_table(header, rows);
    return kExitOk;
  };
}

}  // namespace trainyard::cli
