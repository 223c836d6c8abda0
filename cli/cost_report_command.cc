// `trainyard cost [--team T] [--since D] [--until D] [-o table|json|csv]`: the server's cost
// report (GET /api/v1/cost): spend by team and by pool with the idle share, then per job, with
// GPU-hours, work lost to interruptions and preemptions, and interruptions.
#include <iostream>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/client.h"
#include "cli/cost_commands.h"
#include "cli/output.h"
#include "model/api_cost_views.h"

namespace trainyard::cli {
namespace {

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

std::string usd(double v) {
  return fmt::format("{:.4f}", v);
}
std::string hours(double v) {
  return fmt::format("{:.3f}", v);
}

std::vector<std::string> totals_cells(const model::CostTotalsView& t) {
  return {usd(t.cost_usd),         hours(t.gpu_hours),   hours(t.idle_gpu_hours),
          hours(t.lost_gpu_hours), usd(t.lost_cost_usd), std::to_string(t.interruptions)};
}

// A table's rows: `first` cells, then the totals.
std::vector<std::string> row_of(std::vector<std::string> first, const model::CostTotalsView& t) {
  auto cells = totals_cells(t);
  first.insert(first.end(), cells.begin(), cells.end());
  return first;
}

std::vector<std::string> header_of(std::vector<std::string> first) {
  static const std::vector<std::string> kMoney = {"COST $",     "GPU-H",  "IDLE GPU-H",
                                                  "LOST GPU-H", "LOST $", "INTERRUPTIONS"};
  first.insert(first.end(), kMoney.begin(), kMoney.end());
  return first;
}

// Teams, the idle share (the bill only) and the total.
void print_team_table(const model::CostReportView& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r.teams) rows.push_back(row_of({t.team}, t.totals));
  const bool bill = r.scope == "all";
  if (bill) {
    // What no job held: billed all the same, charged to no team.
    rows.push_back({"__idle__", usd(r.total.idle_cost_usd), hours(r.total.idle_gpu_hours), "-", "-",
                    "-", "-"});
  }
  rows.push_back(row_of({bill ? "TOTAL (bill)" : "TOTAL (team)"}, r.total));
  std::cout << render_table(header_of({"TEAM"}), rows) << "\n";
}

void print_table(const model::CostReportView& r) {
  std::cout << "Cost from " << r.since << " to " << r.until << "\n\n";
  print_team_table(r);
  std::vector<std::vector<std::string>> rows;
  if (!r.pools.empty()) {
    for (const auto& p : r.pools) rows.push_back(row_of({p.pool}, p.totals));
    std::cout << render_table(header_of({"POOL"}), rows) << "\n";
  }
  rows.clear();
  for (const auto& j : r.jobs)
    rows.push_back(row_of({j.job, j.name.empty() ? "-" : j.name, j.team}, j.totals));
  if (rows.empty()) {
    std::cout << "No job held a GPU in this period.\n";
  } else {
    std::cout << render_table(header_of({"JOB", "NAME", "TEAM"}), rows);
  }
}

void print_csv(const model::CostReportView& r) {
  std::cout << "kind,key,name,team,cost_usd,gpu_hours,idle_gpu_hours,idle_cost_usd,"
               "lost_gpu_hours,lost_cost_usd,interruptions\n";
  auto line = [](const std::string& kind, const std::string& key, const std::string& name,
                 const std::string& team, const model::CostTotalsView& t) {
    std::cout << fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{}\n", kind,
                             key, name, team, t.cost_usd, t.gpu_hours, t.idle_gpu_hours,
                             t.idle_cost_usd, t.lost_gpu_hours, t.lost_cost_usd, t.interruptions);
  };
  // Names are user-chosen: quote them the CSV way when they hold a comma or a quote.
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  line("total", r.scope, "", "", r.total);
  for (const auto& t : r.teams) line("team", quoted(t.team), "", quoted(t.team), t.totals);
  for (const auto& p : r.pools) line("pool", quoted(p.pool), "", "", p.totals);
  for (const auto& j : r.jobs) line("job", j.job, quoted(j.name), quoted(j.team), j.totals);
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
  auto r = get_reply<model::CostReportView>(api, path);
  if (!r.is_ok()) return report("cost", r.status());
  if (o.output == "json") {
    std::cout << r->raw.dump(2) << "\n";
  } else if (o.output == "csv") {
    print_csv(r->view);
  } else {
    print_table(r->view);
  }
  return kExitOk;
}

}  // namespace trainyard::cli
