// `trainyard alerts [--all]`: the server's firing GPU and job alerts (and, with --all, the
// recently resolved ones), newest first, so a user sees what is wrong without Prometheus.
#include <iostream>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/list_output.h"
#include "cli/output.h"
#include "model/api_alert_views.h"

namespace trainyard::cli {
namespace {

// "GPU 0 / job 12 (train)", "team vision": who the alert is about, short enough for a table.
std::string subject_cell(const model::AlertSubjectView& s) {
  std::string out;
  if (s.gpu) out = fmt::format("GPU {}", s.gpu->index);
  if (!s.jobs.empty()) {
    const auto& j = s.jobs[0];
    std::string job = fmt::format("job {}", j.id);
    if (j.name && !j.name->empty()) job += fmt::format(" ({})", *j.name);
    if (s.jobs.size() > 1) job += fmt::format(" +{}", s.jobs.size() - 1);
    out += out.empty() ? job : " / " + job;
  }
  if (out.empty()) out = "team " + s.team;
  return out.empty() ? "-" : out;
}

std::vector<std::string> alert_row(const model::AlertView& a, bool all, bool wide) {
  std::vector<std::string> row = {a.severity, a.rule, subject_cell(a.subject),
                                  age_of(std::optional(a.started_at))};
  if (all || wide) row.push_back(a.state);
  if (wide) row.push_back(std::to_string(a.id));
  row.push_back(a.summary);
  return row;
}

}  // namespace

Runner add_alerts_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    bool all = false;
    std::string output;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "alerts", "List firing GPU and job alerts (temperature, throttling, XID, ECC, leaks, idle)");
  cmd->add_flag("--all", o->all, "Include recently resolved alerts");
  cmd->add_option("-o,--output", o->output, kListOutputHelp);
  add_client_options(*cmd, o->client);
  return [o] {
    if (auto st = check_list_output(o->output); !st.is_ok()) return report("alerts", st);
    ApiClient api(o->client);
    auto r =
        get_reply<model::AlertListView>(api, o->all ? "/api/v1/alerts?all=1" : "/api/v1/alerts");
    if (!r.is_ok()) return report("alerts", r.status());
    if (o->output == "name") {
      for (const auto& a : r->view.items) std::cout << "alert/" << a.id << "\n";
      return kExitOk;
    }
    if (print_structured(r->raw, o->output)) return kExitOk;
    const bool wide = o->output == "wide";
    if (r->view.items.empty()) {
      std::cerr << (o->all ? "No alerts.\n" : "No alerts firing.\n");
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& a : r->view.items) rows.push_back(alert_row(a, o->all, wide));
    std::vector<std::string> header = {"SEVERITY", "RULE", "SUBJECT", "SINCE"};
    if (o->all || wide) header.push_back("STATE");
    if (wide) header.push_back("ID");
    header.push_back("SUMMARY");
    std::cout << render_table(header, rows);
    return kExitOk;
  };
}

}  // namespace trainyard::cli
