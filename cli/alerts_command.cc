// `trainyard alerts [--all]`: the server's firing GPU and job alerts (and, with --all, the
// recently resolved ones), newest first, so a user sees what is wrong without Prometheus.
#include <iostream>

#include <fmt/format.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/list_output.h"
#include "cli/output.h"

namespace trainyard::cli {
namespace {

// "GPU 0 / job 12 (train)", "team vision": who the alert is about, short enough for a table.
std::string subject_cell(const nlohmann::json& s) {
  std::string out;
  if (s["gpu"].is_object()) out = fmt::format("GPU {}", cell(s["gpu"]["index"]));
  const auto& jobs = s["jobs"];
  if (jobs.is_array() && !jobs.empty()) {
    const auto& j = jobs[0];
    std::string job = fmt::format("job {}", cell(j["id"]));
    if (j["name"].is_string() && !j["name"].get<std::string>().empty())
      job += fmt::format(" ({})", j["name"].get<std::string>());
    if (jobs.size() > 1) job += fmt::format(" +{}", jobs.size() - 1);
    out += out.empty() ? job : " / " + job;
  }
  if (out.empty() && s["team"].is_string()) out = "team " + s["team"].get<std::string>();
  return out.empty() ? "-" : out;
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
    auto r = api.get(o->all ? "/api/v1/alerts?all=1" : "/api/v1/alerts");
    if (!r.is_ok()) return report("alerts", r.status());
    if (print_names((*r)["items"], o->output, "alert", "id")) return kExitOk;
    if (print_structured(*r, o->output)) return kExitOk;
    const bool wide = o->output == "wide";
    const auto& items = (*r)["items"];
    if (!items.is_array() || items.empty()) {
      std::cerr << (o->all ? "No alerts.\n" : "No alerts firing.\n");
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& a : items) {
      std::vector<std::string> row = {cell(a["severity"]), cell(a["rule"]),
                                      subject_cell(a["subject"]), age_of(a["startedAt"])};
      if (o->all || wide) row.push_back(cell(a["state"]));
      if (wide) row.push_back(cell(a["id"]));
      row.push_back(cell(a["summary"]));
      rows.push_back(std::move(row));
    }
    std::vector<std::string> header = {"SEVERITY", "RULE", "SUBJECT", "SINCE"};
    if (o->all || wide) header.push_back("STATE");
    if (wide) header.push_back("ID");
    header.push_back("SUMMARY");
    std::cout << render_table(header, rows);
    return kExitOk;
  };
}

}  // namespace trainyard::cli
