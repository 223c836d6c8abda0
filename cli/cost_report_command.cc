// `trainyard cost [--team T] [--since D] [--until D] [-o table|json|csv]`: the server's cost
// report (GET /api/v1/cost): spend by team and by pool with the idle share, then per job, with
// GPU-hours, work lost to interruptions and preemptions, and interruptions.
#include <iostream>

#include <fmt/format.h>

#include "cli/client.h"
#include "cli/cost_commands.h"
#include "cli/output.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

// Query values here are team names and times ("-24h", "2026-11-23T10:00:00Z").
std::string query_escape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string usd(const json& v) {
  return fmt::format("{:.4f}", v.get<double>());
}
std::string hours(const json& v) {
  return fmt::format("{:.3f}", v.get<double>());
}

std::vector<std::string> totals_cells(const json& t) {
  return {usd(t["cost_usd"]),         hours(t["gpu_hours"]),   hours(t["idle_gpu_hours"]),
          hours(t["lost_gpu_hours"]), usd(t["lost_cost_usd"]), cell(t["interruptions"])};
}

void print_table(const json& r) {
  const std::vector<std::string> money = {"COST $",     "GPU-H",  "IDLE GPU-H",
                                          "LOST GPU-H", "LOST $", "INTERRUPTIONS"};
  auto header = [&](std::vector<std::string> first) {
    first.insert(first.end(), money.begin(), money.end());
    return first;
  };
  std::cout << "Cost from " << cell(r["since"]) << " to " << cell(r["until"]) << "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r["teams"]) {
    auto row = totals_cells(t);
    row.insert(row.begin(), cell(t["team"]));
    rows.push_back(std::move(row));
  }
  const json& total = r["total"];
  if (r["scope"] == "all") {
    // What no job held: billed all the same, charged to no team.
    rows.push_back({"__idle__", usd(total["idle_cost_usd"]), hours(total["idle_gpu_hours"]), "-",
                    "-", "-", "-"});
  }
  auto total_row = totals_cells(total);
  total_row.insert(total_row.begin(), r["scope"] == "all" ? "TOTAL (bill)" : "TOTAL (team)");
  rows.push_back(std::move(total_row));
  std::cout << render_table(header({"TEAM"}), rows) << "\n";
  if (!r["pools"].empty()) {
    rows.clear();
    for (const auto& p : r["pools"]) {
      auto row = totals_cells(p);
      row.insert(row.begin(), cell(p["pool"]));
      rows.push_back(std::move(row));
    }
    std::cout << render_table(header({"POOL"}), rows) << "\n";
  }
  rows.clear();
  for (const auto& j : r["jobs"]) {
    auto row = totals_cells(j);
    row.insert(row.begin(),
               {cell(j["job"]), j["name"].get<std::string>().empty() ? "-" : cell(j["name"]),
                cell(j["team"])});
    rows.push_back(std::move(row));
  }
  if (rows.empty()) {
    std::cout << "No job held a GPU in this period.\n";
  } else {
    std::cout << render_table(header({"JOB", "NAME", "TEAM"}), rows);
  }
}

void print_csv(const json& r) {
  std::cout << "kind,key,name,team,cost_usd,gpu_hours,idle_gpu_hours,idle_cost_usd,"
               "lost_gpu_hours,lost_cost_usd,interruptions\n";
  auto line = [](const std::string& kind, const std::string& key, const std::string& name,
                 const std::string& team, const json& t) {
    std::cout << fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{}\n", kind,
                             key, name, team, t["cost_usd"].get<double>(),
                             t["gpu_hours"].get<double>(), t["idle_gpu_hours"].get<double>(),
                             t["idle_cost_usd"].get<double>(), t["lost_gpu_hours"].get<double>(),
                             t["lost_cost_usd"].get<double>(), t["interruptions"].get<int>());
  };
  // Names are user-chosen: quote them the CSV way when they hold a comma or a quote.
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  line("total", r["scope"].get<std::string>(), "", "", r["total"]);
  for (const auto& t : r["teams"]) line("team", quoted(t["team"]), "", quoted(t["team"]), t);
  for (const auto& p : r["pools"]) line("pool", quoted(p["pool"]), "", "", p);
  for (const auto& j : r["jobs"])
    line("job", j["job"].get<std::string>(), quoted(j["name"]), quoted(j["team"]), j);
}

}  // namespace

void add_cost_report_options(CLI::App& cost, CostReportOptions& o) {
  cost.add_option("--team", o.team, "Only this team's jobs and row (a team token: its own)");
  cost.add_option("--since", o.since,
                  "Start: ISO 8601 UTC (2026-11-23T00:00:00Z) or an offset like -24h, -7d "
                  "(default: start of this UTC month)");
  cost.add_option("--until", o.until, "End, like --since (default: now)");
  cost.add_option("-o,--output", o.output, "table, json or csv")->capture_default_str();
  add_client_options(cost, o.client);
}

int run_cost_report(const CostReportOptions& o) {
  if (o.output != "table" && o.output != "json" && o.output != "csv")
    return report("cost", util::invalid_argument("-o must be table, json or csv"));
  std::string path = "/api/v1/cost";
  char sep = '?';
  for (const auto& [key, value] :
       {std::pair{"team", o.team}, std::pair{"since", o.since}, std::pair{"until", o.until}}) {
    if (value.empty()) continue;
    path += fmt::format("{}{}={}", sep, key, query_escape(value));
    sep = '&';
  }
  ApiClient api(o.client);
  auto r = api.get(path);
  if (!r.is_ok()) return report("cost", r.status());
  if (o.output == "json") {
    std::cout << r->dump(2) << "\n";
  } else if (o.output == "csv") {
    print_csv(*r);
  } else {
    print_table(*r);
  }
  return kExitOk;
}

}  // namespace trainyard::cli
