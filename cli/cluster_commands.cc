// Client commands about the cluster: `nodes`, `queues`, and `token create`.
#include <iostream>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/job_lookup.h"
#include "cli/list_output.h"
#include "cli/output.h"
#include "model/api_cluster_views.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

// -o name prints KIND/NAME per item (list_output.h); -o json and yaml print the server's reply
// as it came; wide and the table go to `table`.
template <typename Item>
int print(const std::vector<Item>& items, const json& raw, const std::string& output,
          const std::string& kind, const std::function<void()>& table) {
  if (output == "name") {
    for (const auto& item : items) std::cout << kind << "/" << item.name << "\n";
    return kExitOk;
  }
  if (!print_structured(raw, output)) table();
  return kExitOk;
}

std::string gpus_text(const model::GpusByModel& gpus) {
  std::string out;
  for (const auto& [k, v] : gpus) out += (out.empty() ? "" : ",") + k + "=" + json(v).dump();
  return out;
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
    auto r = get_reply<model::NodeListView>(api, "/api/v1/nodes");
    if (!r.is_ok()) return report("nodes", r.status());
    const bool wide = o->output == "wide";
    return print(r->view.items, r->raw, o->output, "node", [&] {
      std::vector<std::vector<std::string>> rows;
      for (const auto& n : r->view.items) {
        const bool slurm = n.batch && n.batch->executor == "slurm";
        const bool problem = n.batch && n.batch->problem;
        rows.push_back({n.name, n.gpu_model.empty() ? "-" : n.gpu_model,
                        fmt::format("{}/{}", n.gpus_in_use, n.gpus),
                        slurm         ? "slurm"
                        : n.simulated ? "simulated"
                                      : "real",
                        n.mig ? "yes" : "no", fmt::format("{}", n.cpu_milli / 1000),
                        fmt::format("{}Gi", n.memory_bytes >> 30), n.pool,
                        n.zone.empty() ? "-" : n.zone,
                        problem ? fmt::format("{} ({})", n.state, *n.batch->problem) : n.state,
                        n.price_per_hour > 0 ? fmt::format("{:.4f}", n.price_per_hour) : "-"});
        if (wide) rows.back().push_back(labels_cell(n.labels));
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
    auto r = get_reply<model::QueueListView>(api, "/api/v1/queues");
    if (!r.is_ok()) return report("queues", r.status());
    const bool wide = o->output == "wide";
    return print(r->view.items, r->raw, o->output, "queue", [&] {
      std::vector<std::vector<std::string>> rows;
      for (const auto& q : r->view.items) {
        const std::string quota = gpus_text(q.quota);
        rows.push_back({q.name, json(q.weight).dump(), quota.empty() ? "-" : quota,
                        std::to_string(q.pending), std::to_string(q.running),
                        json(q.gpus_in_use).dump()});
        if (wide) rows.back().push_back(q.cohort.empty() ? "-" : q.cohort);
      }
      std::vector<std::string> header = {"TEAM",    "WEIGHT",  "QUOTA",
                                         "PENDING", "RUNNING", "GPUS IN USE"};
      if (wide) header.push_back("COHORT");
      std::cout << "policy: " << r->view.policy << "\n";
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
