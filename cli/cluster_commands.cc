// Client commands about the cluster: `nodes`, `queues`, and `token create`.
#include <iostream>

#include <fmt/format.h>

#include "cli/job_lookup.h"
#include "cli/list_output.h"
#include "cli/output.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

// -o name prints KIND/NAME per item (list_output.h); wide and the table go to `table`.
int print(const json& j, const std::string& output, const std::string& kind,
          const std::function<void()>& table) {
  if (print_names(j["items"], output, kind, "name")) return kExitOk;
  if (!print_structured(j, output)) table();
  return kExitOk;
}

Runner add_nodes(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string output;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "nodes", "List the nodes (this machine's GPUs and cloud pools' nodes) and their use");
  cmd->add_option("-o,--output", o->output, kListOutputHelp);
  add_client_options(*cmd, o->client);
  return [o] {
    if (auto st = check_list_output(o->output); !st.is_ok()) return report("nodes", st);
    ApiClient api(o->client);
    auto r = api.get("/api/v1/nodes");
    if (!r.is_ok()) return report("nodes", r.status());
    const bool wide = o->output == "wide";
    return print(*r, o->output, "node", [&] {
      std::vector<std::vector<std::string>> rows;
      for (const auto& n : (*r)["items"]) {
        const std::string zone = n.value("zone", "");
        const double price = n.value("pricePerHour", 0.0);
        rows.push_back({cell(n["name"]),
                        n["gpuModel"].get<std::string>().empty() ? "-" : cell(n["gpuModel"]),
                        fmt::format("{}/{}", cell(n["gpusInUse"]), cell(n["gpus"])),
                        n.value("executor", "") == "slurm" ? "slurm"
                        : n["simulated"].get<bool>()       ? "simulated"
                                                           : "real",
                        n["mig"].get<bool>() ? "yes" : "no",
                        fmt::format("{}", n["cpuMilli"].get<int64_t>() / 1000),
                        fmt::format("{}Gi", n["memoryBytes"].get<int64_t>() >> 30),
                        n.value("pool", "-"), zone.empty() ? "-" : zone,
                        n.contains("problem") ? fmt::format("{} ({})", n.value("state", "ready"),
                                                            n["problem"].get<std::string>())
                                              : n.value("state", "ready"),
                        price > 0 ? fmt::format("{:.4f}", price) : "-"});
        if (wide) rows.back().push_back(labels_cell(n.value("labels", json::object())));
      }
      std::vector<std::string> header = {"NAME",   "GPU",  "IN USE", "KIND",  "MIG", "CPU",
                                         "MEMORY", "POOL", "ZONE",   "STATE", "$/H"};
      if (wide) header.push_back("LABELS");
      std::cout << render_table(header, rows);
    });
  };
}

Runner add_queues(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string output;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("queues", "List teams: quotas, pending and running jobs");
  cmd->add_option("-o,--output", o->output, kListOutputHelp);
  add_client_options(*cmd, o->client);
  return [o] {
    if (auto st = check_list_output(o->output); !st.is_ok()) return report("queues", st);
    ApiClient api(o->client);
    auto r = api.get("/api/v1/queues");
    if (!r.is_ok()) return report("queues", r.status());
    const bool wide = o->output == "wide";
    return print(*r, o->output, "queue", [&] {
      std::vector<std::vector<std::string>> rows;
      for (const auto& q : (*r)["items"]) {
        std::string quota;
        for (const auto& [k, v] : q["quota"].items())
          quota += (quota.empty() ? "" : ",") + k + "=" + cell(v);
        rows.push_back({cell(q["name"]), cell(q["weight"]), quota.empty() ? "-" : quota,
                        cell(q["pending"]), cell(q["running"]), cell(q["gpusInUse"])});
        if (wide) rows.back().push_back(q.value("cohort", "").empty() ? "-" : cell(q["cohort"]));
      }
      std::vector<std::string> header = {"TEAM",    "WEIGHT",  "QUOTA",
                                         "PENDING", "RUNNING", "GPUS IN USE"};
      if (wide) header.push_back("COHORT");
      std::cout << "policy: " << cell((*r)["policy"]) << "\n";
      std::cout << render_table(header, rows);
    });
  };
}

Runner add_token(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string team, name;
    bool admin = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("token", "Manage API tokens (admin only)");
  cmd->require_subcommand(1);
  CLI::App* create = cmd->add_subcommand("create", "Create a token and print it once");
  create->add_option("--team", o->team, "The team the token acts for");
  create->add_option("--name", o->name, "A label for the token");
  create->add_flag("--admin", o->admin, "An admin token (sees and changes every team's jobs)");
  add_client_options(*create, o->client);
  return [o] {
    if (o->team.empty() && !o->admin)
      return report("token create", util::invalid_argument("give --team TEAM (or --admin)"));
    ApiClient api(o->client);
    json body = {{"team", o->team}, {"name", o->name}, {"admin", o->admin}};
    auto r = api.post("/api/v1/tokens", body.dump(), "application/json");
    if (!r.is_ok()) return report("token create", r.status());
    std::cout << (*r)["token"].get<std::string>() << "\n";
    return kExitOk;
  };
}

}  // namespace

void add_cluster_commands(CLI::App& app, std::map<std::string, Runner>& runners) {
  runners["nodes"] = add_nodes(app);
  runners["queues"] = add_queues(app);
  runners["token"] = add_token(app);
}

}  // namespace trainyard::cli
