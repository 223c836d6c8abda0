// `trainyard cost advise --gpus N [--workers W] [--accelerator X]... [--spot]`: ranks the price
// catalog's offerings for a job by cost per unit of work (docs/cloud.md), so a user sees which
// machine trains cheapest, not which is cheapest per hour. Reads local files; no server needed.
// `trainyard cost` alone asks the server for its cost report (cost_report_command.cc).
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/cost_commands.h"
#include "cli/output.h"
#include "cloud/advise.h"
#include "cloud/catalog.h"

namespace trainyard::cli {
namespace {

struct CostAdviseOptions {
  int gpus = 1;
  int workers = 1;
  std::vector<std::string> accelerators;
  bool spot = false;
  std::string job_type = std::string(cloud::kDefaultJobType);
  std::string catalog = "../shared/catalog";
  std::string throughputs = "../shared/traces/gavel/simulation_throughputs.json";
  int top = 20;
};

int bad_input(const util::Status& st) {
  std::fprintf(stderr, "trainyard cost advise: %s\n", st.message().c_str());
  return kExitBadInput;
}

std::string price_cell(double usd) {
  return fmt::format("{:.2f}", usd);
}

int run_advise(const CostAdviseOptions& o) {
  auto catalog = cloud::load_catalog(o.catalog);
  if (!catalog.is_ok()) return bad_input(catalog.status());
  auto throughput = cloud::ThroughputTable::load_gavel(o.throughputs);
  if (!throughput.is_ok()) return bad_input(throughput.status());
  auto ranked = cloud::rank_offerings(
      catalog->offerings, *throughput,
      {.gpus_per_worker = o.gpus,
       .workers = o.workers,
       .accelerators = o.accelerators,
       .purchase = o.spot ? cloud::PurchaseOption::Spot : cloud::PurchaseOption::OnDemand,
       .job_type = o.job_type});
  if (!ranked.is_ok()) return bad_input(ranked.status());
  if (ranked->empty()) {
    std::cerr << "No offering fits: no node has " << o.gpus << " GPUs of the requested kind with "
              << (o.spot ? "a spot" : "an on-demand") << " price.\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < ranked->size() && static_cast<int>(i) < o.top; ++i) {
    const auto& r = (*ranked)[i];
    const auto& off = catalog->offerings[r.offering];
    rows.push_back(
        {std::to_string(i + 1), off.provider, off.instance_type,
         off.zone.empty() ? off.region : off.zone,
         fmt::format("{}x{}", off.gpus_per_node, off.accelerator), std::to_string(r.nodes),
         price_cell(r.price_per_hour),
         fmt::format("{:.2f}{}", r.relative_throughput, r.throughput_estimated ? "*" : ""),
         fmt::format("{:.3f}", r.cost_per_work)});
  }
  std::cout << render_table(
      {"RANK", "PROVIDER", "INSTANCE", "LOCATION", "GPUS", "NODES", "$/H", "SPEED/GPU", "$/V100-H"},
      rows);
  std::cout << fmt::format(
      "{} of {} offerings fit; job type '{}'; SPEED/GPU relative to V100-16GB (* = estimated "
      "from datasheets); $/V100-H = USD per V100-equivalent GPU-hour of work.\n",
      ranked->size(), catalog->offerings.size(), o.job_type);
  return kExitOk;
}

}  // namespace

Runner add_cost_command(CLI::App& app) {
  auto o = std::make_shared<CostAdviseOptions>();
  auto report_options = std::make_shared<CostReportOptions>();
  CLI::App* cost = app.add_subcommand(
      "cost",
      "What GPUs cost: the server's report by team, pool and job (idle and lost work "
      "included); `cost advise` ranks cloud offerings");
  cost->require_subcommand(0, 1);
  add_cost_report_options(*cost, *report_options);
  CLI::App* advise =
      cost->add_subcommand("advise", "Rank catalog offerings by cost per unit of training work");
  advise->add_option("--gpus", o->gpus, "GPUs per worker")->required()->check(CLI::Range(1, 1024));
  advise->add_option("--workers", o->workers, "Workers (each on one node)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  advise->add_option("--accelerator", o->accelerators,
                     "Allowed accelerator (repeatable), e.g. H100-80GB, A100-80GB, V100");
  advise->add_flag("--spot", o->spot, "Price spot capacity instead of on-demand");
  advise->add_option("--job-type", o->job_type, "Gavel job type for throughputs")
      ->capture_default_str();
  advise->add_option("--catalog", o->catalog, "Folder of <provider>_*.csv price catalogs")
      ->capture_default_str();
  advise->add_option("--throughputs", o->throughputs, "Gavel simulation_throughputs.json")
      ->capture_default_str();
  advise->add_option("--top", o->top, "Rows to print")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  return [o, report_options, advise] {
    return advise->parsed() ? run_advise(*o) : run_cost_report(*report_options);
  };
}

}  // namespace trainyard::cli
