#include "sim/cost_scenarios.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/metrics.h"
#include "sim/report.h"
#include "sim/svg_plot.h"

namespace trainyard::sim {
namespace {

bool is_spot(const model::Pool& p) {
  return p.kind == model::PoolKind::Spot;
}

// The rows of cost-summary.json, one object per scenario.
nlohmann::json cost_summary_json(const std::vector<CostSummary>& rows) {
  nlohmann::json summary = nlohmann::json::array();
  for (const auto& r : rows) {
    summary.push_back({{"scenario", r.scenario},
                       {"jobs", r.jobs},
                       {"unfinished", r.unfinished},
                       {"unfinished_by_reason", r.unfinished_by_reason},
                       {"cost_usd", r.cost_usd},
                       {"cost_per_job_usd", r.cost_per_job},
                       {"avg_jct_s", r.avg_jct_s},
                       {"p99_jct_s", r.p99_jct_s},
                       {"billed_gpu_hours", r.billed_gpu_hours},
                       {"idle_gpu_hours", r.idle_gpu_hours},
                       {"lost_gpu_hours", r.lost_gpu_hours},
                       {"lost_usd", r.lost_usd},
                       {"interruptions", r.interruptions},
                       {"interrupted_job_stops", r.interrupted_job_stops},
                       {"lost_s_per_interruption", r.lost_s_per_interruption},
                       {"restart_s_per_interruption", r.restart_s_per_interruption},
                       {"peak_nodes", r.peak_nodes},
                       {"showback_usd", r.showback_usd},
                       {"stopped_at_horizon", r.stopped_at_horizon}});
  }
  return summary;
}

// cost-<scenario>.csv: one line per team, per pool, and the total.
std::string cost_breakdown_csv(const cloud::CostReport& report) {
  std::string csv = "kind,name,cost_usd,gpu_hours,idle_gpu_hours,lost_gpu_hours,lost_usd\n";
  auto line = [&](const char* kind, const std::string& name, const cloud::CostTotals& t) {
    csv += fmt::format("{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f}\n", kind, name, t.cost_usd,
                       t.gpu_hours, t.idle_gpu_hours, t.lost_gpu_hours, t.lost_cost_usd);
  };
  for (const auto& [name, t] : report.teams) line("team", name, t);
  for (const auto& [name, t] : report.pools) line("pool", name, t);
  line("total", "", report.total);
  return csv;
}

// The scenario's money spent and GPUs up over hours since its first timeline point, as one
// series of each plot.
void add_timeline_series(const SimResult& r, std::vector<Series>& cost,
                         std::vector<Series>& fleet) {
  Series c{r.policy, {}, {}}, n{r.policy, {}, {}};
  const util::Time t0 = r.timeline.empty() ? util::Time{} : r.timeline.front().time;
  for (const auto& p : r.timeline) {
    const double h = util::to_seconds(p.time - t0) / 3600.0;
    c.x.push_back(h);
    c.y.push_back(p.cost_usd);
    n.x.push_back(h);
    n.y.push_back(p.fleet_gpus);
  }
  cost.push_back(std::move(c));
  fleet.push_back(std::move(n));
}

}  // namespace

util::Result<std::vector<std::shared_ptr<const CloudScenario>>> build_cost_scenarios(
    const model::ClusterConfig& cluster, const CostScenarioOptions& options) {
  std::vector<model::Pool> spot, on_demand;
  for (const auto& p : cluster.pools) {
    if (!p.autoscaled) continue;
    (is_spot(p) ? spot : on_demand).push_back(p);
  }
  std::vector<std::shared_ptr<const CloudScenario>> out;
  for (const auto& name : options.scenarios) {
    auto s = std::make_shared<CloudScenario>();
    s->name = name;
    s->offerings = options.offerings;
    s->advisor = options.advisor;
    s->simcloud = options.simcloud;
    s->checkpoint_cost = options.checkpoint_cost;
    s->zone_backoff = options.zone_backoff;
    s->throughputs = options.throughputs;
    if (name == "on-demand") {
      s->pools = on_demand;
      s->checkpoints = CheckpointPolicy::None;
    } else if (name == "spot-restart" || name == "spot-young") {
      s->pools = spot;
      s->all_preemptible = true;
      s->checkpoints = name == "spot-restart" ? CheckpointPolicy::None : CheckpointPolicy::Young;
    } else if (name == "mixed") {
      s->pools = spot;
      s->pools.insert(s->pools.end(), on_demand.begin(), on_demand.end());
      s->checkpoints = CheckpointPolicy::Young;
    } else {
      return util::invalid_argument(
          fmt::format("unknown cost scenario '{}'; choose from on-demand, spot-restart, "
                      "spot-young, mixed",
                      name));
    }
    const bool needs_spot = name != "on-demand";
    const bool needs_on_demand = name == "on-demand" || name == "mixed";
    if ((needs_spot && spot.empty()) || (needs_on_demand && on_demand.empty())) {
      return util::invalid_argument(
          fmt::format("scenario '{}' needs {} in the cluster: add a cloud pool with kind: {} and "
                      "instanceType:",
                      name, needs_spot && spot.empty() ? "a spot pool" : "an on-demand pool",
                      needs_spot && spot.empty() ? "spot" : "on-demand"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

CostSummary summarize_cost(const SimResult& r) {
  CostSummary s;
  s.scenario = r.policy;
  s.jobs = static_cast<int64_t>(r.jobs.size());
  s.unfinished = r.unfinished;
  s.unfinished_by_reason = r.unfinished_by_reason;
  std::vector<double> jct;
  for (const auto& j : r.jobs) jct.push_back(util::to_seconds(j.finish - j.submit));
  if (r.cost) {
    s.cost_usd = r.cost->total.cost_usd;
    s.idle_gpu_hours = r.cost->total.idle_gpu_hours;
    s.lost_gpu_hours = r.cost->total.lost_gpu_hours;
    s.lost_usd = r.cost->total.lost_cost_usd;
    double shown = 0;
    for (const auto& [name, t] : r.cost->jobs) shown += t.cost_usd;
    for (const auto& [name, p] : r.cost->pools) shown += p.idle_cost_usd;
    s.showback_usd = shown;
  }
  // Over every job, not only the completed ones: under restart-from-scratch the jobs that lose
  // most to reclaims are the ones that never finish.
  s.interruptions = r.interruptions;
  s.interrupted_job_stops = r.interrupted_stops;
  if (r.interrupted_stops > 0) {
    const auto stops = static_cast<double>(r.interrupted_stops);
    s.lost_s_per_interruption = util::to_seconds(r.interruption_lost_work) / stops;
    s.restart_s_per_interruption = util::to_seconds(r.interruption_restart) / stops;
  }
  s.cost_per_job = s.jobs > 0 ? s.cost_usd / static_cast<double>(s.jobs) : 0;
  if (!jct.empty()) {
    double sum = 0;
    for (double x : jct) sum += x;
    s.avg_jct_s = sum / static_cast<double>(jct.size());
    s.p99_jct_s = percentile(jct, 99);
  }
  s.billed_gpu_hours = r.billed_gpu_hours;
  s.peak_nodes = r.peak_nodes;
  s.stopped_at_horizon = r.stopped_at_horizon;
  return s;
}

std::string cost_table(const std::vector<CostSummary>& rows) {
  std::string out = fmt::format(
      "{:<13} {:>6} {:>6} {:>11} {:>9} {:>7} {:>9} {:>9} {:>8} {:>7} {:>8} {:>8} {:>7} {:>7}\n",
      "scenario", "jobs", "unfin", "cost $", "$/job", "ratio", "avg JCT", "p99 JCT", "lost GPUh",
      "idle %", "interr.", "lost/int", "restart", "nodes");
  const double base = rows.empty() ? 0 : rows.front().cost_per_job;
  for (const auto& r : rows) {
    const double idle_pct =
        r.billed_gpu_hours > 0 ? 100.0 * r.idle_gpu_hours / r.billed_gpu_hours : 0;
    out += fmt::format(
        "{:<13} {:>6} {:>6} {:>11.2f} {:>9.2f} {:>6.3f}x {:>9} {:>9} {:>9.1f} {:>6.2f}% {:>8} "
        "{:>8} {:>7} {:>7}\n",
        r.scenario, r.jobs, r.unfinished, r.cost_usd, r.cost_per_job,
        base > 0 ? r.cost_per_job / base : 0.0, format_duration_s(r.avg_jct_s),
        format_duration_s(r.p99_jct_s), r.lost_gpu_hours, idle_pct, r.interruptions,
        format_duration_s(r.lost_s_per_interruption),
        format_duration_s(r.restart_s_per_interruption), r.peak_nodes);
  }
  for (const auto& r : rows) {
    if (r.unfinished == 0) continue;
    std::string why;
    for (const auto& [reason, n] : r.unfinished_by_reason) {
      why += fmt::format("{}{} {}", why.empty() ? "" : ", ", n, reason);
    }
    out += fmt::format("{}: {} unfinished ({}); {}\n", r.scenario, r.unfinished, why,
                       r.stopped_at_horizon ? "the run stopped at its horizon"
                                            : "nothing was left to happen before the horizon");
  }
  return out;
}

std::string sensitivity_table(const std::vector<double>& rates,
                              const std::vector<std::vector<CostSummary>>& by_rate) {
  if (by_rate.empty() || by_rate.front().empty()) return "";
  std::string out = fmt::format("{:<12}", "rate (/h)");
  for (const auto& s : by_rate.front()) out += fmt::format(" {:>14}", s.scenario);
  out += "   (cost per completed job ÷ on-demand's; unfinished jobs in brackets)\n";
  for (size_t i = 0; i < rates.size() && i < by_rate.size(); ++i) {
    out += fmt::format("{:<12.3f}", rates[i]);
    const double base = by_rate[i].front().cost_per_job;
    for (const auto& s : by_rate[i]) {
      const std::string cell =
          s.unfinished > 0
              ? fmt::format("{:.3f}x [{}]", base > 0 ? s.cost_per_job / base : 0.0, s.unfinished)
              : fmt::format("{:.3f}x", base > 0 ? s.cost_per_job / base : 0.0);
      out += fmt::format(" {:>14}", cell);
    }
    out += "\n";
  }
  return out;
}

util::Result<std::vector<std::string>> write_cost_report(const std::string& dir,
                                                         const std::vector<SimResult>& results,
                                                         const std::vector<CostSummary>& rows) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return util::invalid_argument(fmt::format("{}: cannot create: {}", dir, ec.message()));
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& content) -> util::Status {
    const std::string path = dir + "/" + name;
    TY_RETURN_IF_ERROR(write_file(path, content));
    written.push_back(path);
    return util::Status::ok();
  };
  TY_RETURN_IF_ERROR(put("cost-summary.json", cost_summary_json(rows).dump(2) + "\n"));
  std::vector<Series> cost, fleet;
  for (const auto& r : results) {
    if (!r.cost) continue;
    TY_RETURN_IF_ERROR(put(fmt::format("cost-{}.csv", r.policy), cost_breakdown_csv(*r.cost)));
    add_timeline_series(r, cost, fleet);
  }
  TY_RETURN_IF_ERROR(
      put("cost-over-time.svg", render_line_chart(cost, {.title = "Money spent over time",
                                                         .x_label = "time (h)",
                                                         .y_label = "USD spent"})));
  TY_RETURN_IF_ERROR(
      put("fleet-size.svg", render_line_chart(fleet, {.title = "Fleet size over time",
                                                      .x_label = "time (h)",
                                                      .y_label = "GPUs up",
                                                      .step = true})));
  return written;
}

}  // namespace trainyard::sim
