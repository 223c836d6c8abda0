#include "cli/simulate_cost.h"
#include "cli/simulate_html.h"

#include <cstdio>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cloud/catalog.h"
#include "cloud/spot_advisor.h"
#include "cloud/spot_trace.h"
#include "sim/cost_scenarios.h"

namespace trainyard::cli {
namespace {

util::Result<std::vector<double>> parse_rates(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    try {
      size_t used = 0;
      const double r = std::stod(item, &used);
      if (used != item.size() || r < 0) throw std::invalid_argument(item);
      out.push_back(r);
    } catch (const std::exception&) {
      return util::invalid_argument(fmt::format(
          "--rates: '{}' is not a rate; write interruptions per node-hour, e.g. 0.01,0.1,0.5",
          item));
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

void add_cost_sim_options(CLI::App* cmd, CostSimArgs& a) {
  const char* group = "Cloud clusters (pools with instanceType:, see docs/cost.md)";
  cmd->add_option("--scenarios", a.scenarios,
                  "capacity scenarios run side by side: on-demand, spot-restart, spot-young, mixed")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--catalog", a.catalog, "folder of price catalog CSVs")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--interruption-rate", a.interruption_rate,
                  "spot reclaims per node-hour (seeded Poisson process)")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--spot-trace", a.spot_trace,
                  "replay this spot trace for every spot offering instead of the seeded rate; "
                  "the format is told from the content: SkyPilot JSON, or Bamboo CSV "
                  "(time_ms,event,node event log; 'YYYY-MM-DD, HH:MM:SS, count' GCP trace; "
                  "hours,count doc-data series) (docs/cost.md)")
      ->group(group);
  cmd->add_option("--rates", a.rates,
                  "interruption rates for the sensitivity table (empty = skip it)")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--checkpoint-cost", a.checkpoint_cost_s,
                  "seconds a checkpoint stalls training (Young's interval uses it)")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--zone-backoff", a.zone_backoff_s,
                  "seconds a zone that reclaimed a node is avoided")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--provisioning-delay", a.provisioning_delay_s,
                  "seconds from a node request to a ready node")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--throughputs", a.throughputs,
                  "Gavel simulation_throughputs.json: the autoscaler ranks pools by cost per unit "
                  "of work (empty = by cost alone)")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--spot-fallback-wait", a.spot_fallback_wait_s,
                  "seconds a preemptible job waits for spot before on-demand is bought (mixed)")
      ->group(group)
      ->capture_default_str();
}

bool has_cloud_pools(const sim::ClusterConfig& cluster) {
  for (const auto& p : cluster.pools) {
    if (p.autoscaled) return true;
  }
  return false;
}

int run_cost_scenarios(const CostSimArgs& a, const sim::Workload& workload,
                       const sim::ClusterConfig& cluster, const sim::SimOptions& base,
                       const std::string& out_dir) {
  auto fail = [](const util::Status& s) {
    std::fprintf(stderr, "trainyard simulate: %s\n", s.message().c_str());
    return kExitBadInput;
  };
  auto catalog = cloud::load_catalog(a.catalog);
  if (!catalog.is_ok()) return fail(catalog.status());
  auto advisor = cloud::load_spot_advisor(a.catalog + "/aws_spot_advisor_gpu.csv");
  if (!advisor.is_ok()) return fail(advisor.status());
  auto rates = parse_rates(a.rates);
  if (!rates.is_ok()) return fail(rates.status());
  sim::CostScenarioOptions o;
  o.scenarios = split(a.scenarios);
  o.offerings = std::move(catalog->offerings);
  o.advisor = std::move(*advisor);
  o.simcloud.seed = base.seed;
  o.simcloud.default_provisioning_delay = util::seconds_f(a.provisioning_delay_s);
  o.simcloud.provisioning_delay.clear();
  o.checkpoint_cost = util::seconds_f(a.checkpoint_cost_s);
  o.zone_backoff = util::seconds_f(a.zone_backoff_s);
  if (!a.throughputs.empty()) {
    auto table = cloud::ThroughputTable::load_gavel(a.throughputs);
    if (!table.is_ok()) return fail(table.status());
    o.throughputs = std::make_shared<const cloud::ThroughputTable>(std::move(*table));
  }
  std::string market = fmt::format("seeded spot reclaims at {}/node-hour", a.interruption_rate);
  if (!a.spot_trace.empty()) {
    auto trace = cloud::load_spot_trace(a.spot_trace);
    if (!trace.is_ok()) return fail(trace.status());
    cloud::SpotReplay replay;
    replay.every_offering = std::move(*trace);
    o.simcloud.replay = std::move(replay);
    market = "spot reclaims replayed from " + a.spot_trace;
  } else {
    o.simcloud.interruption_rate_per_hour = a.interruption_rate;
  }
  sim::SimOptions opts = base;
  opts.policy.autoscale.spot_fallback_wait = util::seconds_f(a.spot_fallback_wait_s);

  auto run_all = [&](const sim::CostScenarioOptions& so, std::vector<sim::SimResult>* results,
                     std::vector<sim::CostSummary>* rows) -> util::Status {
    auto scenarios = sim::build_cost_scenarios(cluster, so);
    if (!scenarios.is_ok()) return scenarios.status();
    for (const auto& s : *scenarios) {
      sim::SimOptions run = opts;
      run.cloud = s;
      auto r = sim::simulate(workload, cluster, run);
      if (!r.is_ok()) return r.status().with_context(s->name);
      r->policy = s->name;
      std::fprintf(stderr, "  %-13s done in %.1fs (%lld events, %lld scheduler calls)\n",
                   s->name.c_str(), r->wall_seconds, static_cast<long long>(r->events),
                   static_cast<long long>(r->plan_calls));
      rows->push_back(sim::summarize_cost(*r));
      if (results) results->push_back(std::move(r).value());
    }
    return util::Status::ok();
  };

  std::fprintf(stderr, "cost scenarios with %s, policy %s:\n", market.c_str(),
               opts.policy.name.c_str());
  std::vector<sim::SimResult> results;
  std::vector<sim::CostSummary> rows;
  if (auto st = run_all(o, &results, &rows); !st.is_ok()) return fail(st);
  std::printf("\n%s\n%s", market.c_str(), sim::cost_table(rows).c_str());
  bool balanced = true;
  for (const auto& r : rows) {
    if (std::abs(r.showback_usd - r.cost_usd) > 1e-6 * std::max(1.0, r.cost_usd)) balanced = false;
  }
  std::printf("showback (jobs + idle) %s the bill in every scenario\n",
              balanced ? "equals" : "DOES NOT equal");

  if (!rates->empty() && a.spot_trace.empty()) {
    std::vector<std::vector<sim::CostSummary>> by_rate;
    for (double rate : *rates) {
      std::fprintf(stderr, "sensitivity: %.3f reclaims per node-hour\n", rate);
      sim::CostScenarioOptions so = o;
      so.simcloud.interruption_rate_per_hour = rate;
      std::vector<sim::CostSummary> rr;
      if (auto st = run_all(so, nullptr, &rr); !st.is_ok()) return fail(st);
      by_rate.push_back(std::move(rr));
    }
    std::printf("\nsensitivity to the interruption rate\n%s",
                sim::sensitivity_table(*rates, by_rate).c_str());
  }
  auto written = sim::write_cost_report(out_dir, results, rows);
  if (!written.is_ok()) {
    std::fprintf(stderr, "trainyard simulate: %s\n", written.status().message().c_str());
    return kExitFailure;
  }
  if (!a.html.empty()) {
    std::vector<sim::Summary> summaries;
    for (const auto& r : results) summaries.push_back(sim::summarize(r));
    nlohmann::json data = sim::html_report_data(a.run, results, summaries);
    data["cost"] = cost_html_data(results, rows);
    if (auto st = write_html_report(a.html, data); !st.is_ok()) {
      std::fprintf(stderr, "trainyard simulate: %s\n", st.message().c_str());
      return kExitFailure;
    }
    std::printf("wrote %s (the report as one HTML page)\n", a.html.c_str());
  }
  std::printf(
      "\nwrote %zu files to %s/ (cost-summary.json, cost-<scenario>.csv, "
      "cost-over-time.svg, fleet-size.svg)\n",
      written->size(), out_dir.c_str());
  return balanced ? kExitOk : kExitFailure;
}

}  // namespace trainyard::cli
