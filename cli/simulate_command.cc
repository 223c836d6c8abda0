// `trainyard simulate`: replays a trace on a cluster under several policies side by side, in
// one run with the same input and seed, prints the comparison table and writes the report.
#include <unistd.h>
#include <cstdio>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/simulate_cost.h"
#include "cli/simulate_html.h"
#include "model/accelerator.h"
#include "model/cluster_config.h"
#include "model/slurm_conf.h"
#include "model/slurm_gres.h"
#include "sched/policy.h"
#include "sim/metrics.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/synthetic.h"
#include "sim/workload.h"
#include "util/clock.h"

namespace trainyard::cli {
namespace {

struct SimulateArgs {
  std::string trace;
  std::string trace_format = "auto";
  std::string cluster;
  std::string policies = "fifo,backfill,srtf,tiresias,fair,priority,goodput";
  uint64_t seed = 1;
  std::string out = "out/simulate";
  bool plot = false;
  std::string html;  // --html FILE
  bool skip_bad_rows = false;
  int64_t max_jobs = 0;
  double checkpoint_interval_s = 1800;
  double restart_delay_s = 60;
  double grace_period_s = 30;
  std::string runtime_limit = "rounded";
  std::string gittins_prior;
  double min_runtime_s = 300;
  int max_victim_searches = 128;
  double goodput_round_s = 60;
  double restart_gain = 0.25;
  double fair_half_life_s = 0;
  std::string tiresias_thresholds = "3200,25600";
  double starvation_factor = 8;
  bool allow_unfinished = false;
  bool save_on_notice = false;
  bool check_invariants = false;
  std::string slurm_gres_map;     // "a100=A100-40GB,mi250=..."
  std::string slurm_default_gpu;  // model of untyped Gres=gpu:N
  CostSimArgs cost;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

util::Result<std::vector<double>> read_prior(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return util::not_found(fmt::format("{}: cannot open the Gittins prior", path));
  std::vector<double> v;
  char line[256];
  int lineno = 0;
  while (std::fgets(line, sizeof line, f)) {
    ++lineno;
    char* end = nullptr;
    const double x = std::strtod(line, &end);
    if (end == line) {
      if (lineno == 1) continue;  // header
      std::fclose(f);
      return util::invalid_argument(
          fmt::format("{}:{}: expected a GPU-time in seconds", path, lineno));
    }
    if (x > 0) v.push_back(x);
  }
  std::fclose(f);
  if (v.empty()) return util::invalid_argument(fmt::format("{}: no GPU-time samples found", path));
  return v;
}

util::Result<model::SlurmConfOptions> slurm_options(const SimulateArgs& a) {
  model::SlurmConfOptions o;
  o.default_gpu_model = a.slurm_default_gpu;
  for (const std::string& pair : split(a.slurm_gres_map, ',')) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size()) {
      return util::invalid_argument(fmt::format(
          "--slurm-gres-map: '{}' is not TYPE=MODEL; write e.g. a100=A100-40GB,mi250=H100", pair));
    }
    if (model::find_accelerator(pair.substr(eq + 1)) == nullptr) {
      return util::invalid_argument(
          fmt::format("--slurm-gres-map: '{}' is not a trainyard accelerator; {}",
                      pair.substr(eq + 1), model::known_gres_types_hint()));
    }
    o.gres_types[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return o;
}

// A cluster YAML file, a Slurm slurm.conf (the name is slurm.conf or ends in .conf), or an
// Alibaba GPU v2023 node list (openb_node_list_*.csv).
util::Result<sim::ClusterConfig> load_cluster(const SimulateArgs& a) {
  const std::string& path = a.cluster;
  if (model::is_slurm_conf_path(path)) {
    TY_ASSIGN_OR_RETURN(const model::SlurmConfOptions o, slurm_options(a));
    return model::load_slurm_conf(path, o);
  }
  if (!path.ends_with(".csv")) return sim::load_cluster_yaml(path);
  TY_ASSIGN_OR_RETURN(auto nodes, sim::load_alibaba_nodes(path));
  sim::ClusterConfig c;
  c.name = path;
  c.nodes = std::move(nodes);
  return c;
}

// A trace file, or "synthetic:JOBS[:JOBS_PER_HOUR]" for the seeded generator.
util::Result<sim::Workload> load_workload(const SimulateArgs& a, const sim::TraceOptions& topts) {
  if (!a.trace.starts_with("synthetic:")) return sim::load_trace(a.trace_format, a.trace, topts);
  const std::vector<std::string> parts = split(a.trace.substr(10), ':');
  sim::SyntheticOptions o;
  o.seed = a.seed;
  o.finalize_options = topts;
  try {
    if (parts.empty() || parts.size() > 2) throw std::invalid_argument("parts");
    size_t used = 0;
    o.jobs = std::stoll(parts[0], &used);
    if (used != parts[0].size()) throw std::invalid_argument("jobs");
    if (parts.size() == 2) {
      o.jobs_per_hour = std::stod(parts[1], &used);
      if (used != parts[1].size()) throw std::invalid_argument("rate");
    }
  } catch (const std::exception&) {
    return util::invalid_argument(fmt::format(
        "--trace {}: write synthetic:JOBS or synthetic:JOBS:JOBS_PER_HOUR, e.g. synthetic:5000:120",
        a.trace));
  }
  return sim::generate_synthetic(o);
}

int run(const SimulateArgs& a) {
  auto fail = [](const util::Status& s) {
    std::fprintf(stderr, "trainyard simulate: %s\n", s.message().c_str());
    return kExitBadInput;
  };
  sim::TraceOptions topts;
  topts.skip_bad_rows = a.skip_bad_rows;
  topts.seed = a.seed;
  topts.max_jobs = a.max_jobs;
  topts.checkpoint_interval = util::seconds_f(a.checkpoint_interval_s);
  if (a.runtime_limit == "exact")
    topts.runtime_limit = sim::RuntimeLimitMode::Exact;
  else if (a.runtime_limit == "none")
    topts.runtime_limit = sim::RuntimeLimitMode::None;
  auto slurm = slurm_options(a);
  if (!slurm.is_ok()) return fail(slurm.status());
  topts.gres_types = slurm->gres_types;
  sched::PolicyConfig base;
  base.min_runtime = util::seconds_f(a.min_runtime_s);
  base.max_victim_searches = a.max_victim_searches;
  base.goodput.round = util::seconds_f(a.goodput_round_s);
  base.goodput.restart_gain = a.restart_gain;
  base.fair.usage_half_life = util::seconds_f(a.fair_half_life_s);
  base.tiresias.starvation_factor = a.starvation_factor;
  base.tiresias.queue_thresholds.clear();
  for (const std::string& t : split(a.tiresias_thresholds, ',')) {
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    const double last =
        base.tiresias.queue_thresholds.empty() ? 0 : base.tiresias.queue_thresholds.back();
    if (end == t.c_str() || *end != '\0' || !(v > last)) {
      return fail(util::invalid_argument(fmt::format(
          "--tiresias-thresholds: '{}' is not a GPU-second count above the previous threshold; "
          "give increasing positive numbers separated by commas, e.g. 3200,25600",
          t)));
    }
    base.tiresias.queue_thresholds.push_back(v);
  }
  if (!a.gittins_prior.empty()) {
    auto prior = read_prior(a.gittins_prior);
    if (!prior.is_ok()) return fail(prior.status());
    base.tiresias.gittins_prior = *prior;
  }
  const std::vector<std::string> names = split(a.policies, ',');
  for (const auto& n : names) {
    if (auto p = sched::find_policy(n); !p.is_ok()) return fail(p.status());
  }
  auto cluster = load_cluster(a);
  if (!cluster.is_ok()) return fail(cluster.status());
  // Gangs are cut to fit the cluster's smallest GPU node.
  for (const model::Node& n : cluster->nodes) {
    if (n.gpu_count > 0 && (topts.gpus_per_node == 0 || n.gpu_count < topts.gpus_per_node))
      topts.gpus_per_node = n.gpu_count;
  }
  for (const model::Pool& p : cluster->pools) {
    if (p.gpus_per_node > 0 && (topts.gpus_per_node == 0 || p.gpus_per_node < topts.gpus_per_node))
      topts.gpus_per_node = p.gpus_per_node;
  }
  auto workload = load_workload(a, topts);
  if (!workload.is_ok()) return fail(workload.status());
  std::fprintf(stderr, "trainyard simulate: %zu jobs from %s", workload->jobs.size(),
               a.trace.c_str());
  if (workload->skipped_rows > 0)
    std::fprintf(stderr, " (%lld bad rows skipped)",
                 static_cast<long long>(workload->skipped_rows));
  std::string not_replayed;
  for (const auto& [reason, rows] : workload->not_replayed) {
    not_replayed += fmt::format("{}{} {}", not_replayed.empty() ? "" : ", ", rows, reason);
  }
  if (!not_replayed.empty()) std::fprintf(stderr, " (not replayed: %s)", not_replayed.c_str());
  std::fprintf(stderr, "; cluster %s: %zu nodes, %lld GPUs\n", a.cluster.c_str(),
               cluster->nodes.size(), static_cast<long long>(cluster->total_gpus()));
  for (const std::string& note : workload->notes) {
    std::fprintf(stderr, "trainyard simulate: note: %s\n", note.c_str());
  }
  if (has_cloud_pools(*cluster)) {
    sim::SimOptions opts;
    opts.policy = base;
    opts.policy.name = names.front();
    opts.seed = a.seed;
    opts.restart_delay = util::seconds_f(a.restart_delay_s);
    opts.grace_period = util::seconds_f(a.grace_period_s);
    opts.save_on_notice = a.save_on_notice;
    opts.full_invariant_check = a.check_invariants;
    CostSimArgs cost = a.cost;
    cost.html = a.html;
    cost.run = {a.trace,
                a.cluster,
                cluster->total_gpus(),
                static_cast<int64_t>(workload->jobs.size()),
                workload->skipped_rows,
                a.seed};
    return run_cost_scenarios(cost, *workload, *cluster, opts, a.out);
  }
  std::vector<sim::SimResult> results;
  std::vector<sim::Summary> summaries;
  for (const auto& name : names) {
    sim::SimOptions opts;
    opts.policy = base;
    opts.policy.name = name;
    opts.seed = a.seed;
    opts.restart_delay = util::seconds_f(a.restart_delay_s);
    opts.grace_period = util::seconds_f(a.grace_period_s);
    opts.save_on_notice = a.save_on_notice;
    opts.full_invariant_check = a.check_invariants;
    util::Duration last_print = util::WallClock::steady_now();
    opts.progress = [&](int64_t done, int64_t total, util::Time now) {
      const util::Duration t = util::WallClock::steady_now();
      if (t - last_print < util::seconds(2)) return;
      last_print = t;
      std::fprintf(
          stderr, "  %-9s %5.1f%% of jobs finished, simulated day %.1f\n", name.c_str(),
          100.0 * static_cast<double>(done) / static_cast<double>(std::max<int64_t>(total, 1)),
          util::to_seconds(now) / 86400.0);
    };
    opts.progress_every = 50000;
    auto r = sim::simulate(*workload, *cluster, opts);
    if (!r.is_ok()) {
      std::fprintf(stderr, "trainyard simulate: %s: %s\n", name.c_str(),
                   r.status().message().c_str());
      return kExitFailure;
    }
    summaries.push_back(sim::summarize(*r));
    std::fprintf(stderr, "  %-9s done in %.1fs (%lld events, %lld scheduler calls)\n", name.c_str(),
                 r->wall_seconds, static_cast<long long>(r->events),
                 static_cast<long long>(r->plan_calls));
    results.push_back(std::move(r).value());
  }
  std::printf("\n%s", sim::comparison_table(summaries).c_str());
  int64_t unfinished = 0;
  for (const auto& s : summaries) {
    if (s.unfinished > 0) {
      std::fprintf(stderr,
                   "trainyard simulate: %s left %lld of %lld jobs unfinished: they can never fit "
                   "this cluster, and the averages above cover only the jobs that finished\n",
                   s.policy.c_str(), static_cast<long long>(s.unfinished),
                   static_cast<long long>(s.unfinished + s.jobs));
    }
    unfinished = std::max(unfinished, s.unfinished);
  }
  sim::RunInfo info{a.trace,
                    a.cluster,
                    cluster->total_gpus(),
                    static_cast<int64_t>(workload->jobs.size()),
                    workload->skipped_rows,
                    a.seed};
  auto written = sim::write_report(a.out, info, results, summaries, a.plot);
  if (!written.is_ok()) {
    std::fprintf(stderr, "trainyard simulate: %s\n", written.status().message().c_str());
    return kExitFailure;
  }
  std::printf("\nwrote %zu files to %s/ (summary.json, per-job and timeline CSVs%s)\n",
              written->size(), a.out.c_str(),
              a.plot ? ", jct-cdf.svg, gpu-allocation.svg, queue-length.svg" : "");
  if (!a.html.empty()) {
    if (auto st = write_html_report(a.html, sim::html_report_data(info, results, summaries));
        !st.is_ok()) {
      std::fprintf(stderr, "trainyard simulate: %s\n", st.message().c_str());
      return kExitFailure;
    }
    std::printf("wrote %s (the report as one HTML page)\n", a.html.c_str());
  }
  if (unfinished > 0 && !a.allow_unfinished) {
    std::fprintf(stderr,
                 "trainyard simulate: failing because jobs never ran (the report is written); "
                 "change the cluster, or pass --allow-unfinished to accept it\n");
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Runner add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "simulate", "Replay a job trace on a simulated cluster under several policies");
  cmd->add_option("--trace", args->trace,
                  "trace file (Philly, Alibaba pods, Tiresias, Sia/Pollux, Slurm sacct or generic "
                  "CSV), or "
                  "synthetic:JOBS[:JOBS_PER_HOUR]")
      ->required();
  cmd->add_option("--trace-format", args->trace_format,
                  "auto, or one of the formats in docs/trace-formats.md")
      ->capture_default_str();
  cmd->add_option("--cluster", args->cluster,
                  "cluster YAML (see examples/clusters/), a Slurm slurm.conf (a file named "
                  "slurm.conf or *.conf, e.g. examples/clusters/slurm.conf), or an Alibaba node "
                  "list CSV")
      ->required();
  cmd->add_option("--slurm-gres-map", args->slurm_gres_map,
                  "slurm.conf GRES GPU types the built-in mapping lacks, as TYPE=MODEL pairs "
                  "separated by commas (a100=A100-40GB)");
  cmd->add_option("--slurm-default-gpu", args->slurm_default_gpu,
                  "accelerator model of slurm.conf nodes whose Gres=gpu:N names no type");
  cmd->add_option("--policy", args->policies,
                  "comma-separated policies: fifo,backfill,srtf,tiresias,fair,priority,goodput")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed,
                  "seed for everything random (priority classes of traces without them)")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "folder for summary.json, CSVs and plots")
      ->capture_default_str();
  cmd->add_option("--html", args->html,
                  "also write the report as one self-contained HTML page (table, JCT CDF, GPU "
                  "allocation and queue length per policy; cost scenarios when the run has them)")
      ->type_name("FILE");
  cmd->add_flag("--plot", args->plot,
                "also write SVG plots: JCT CDF, GPU allocation and queue length over time");
  cmd->add_flag("--skip-bad-rows", args->skip_bad_rows,
                "skip malformed trace rows (and report how many) instead of stopping");
  cmd->add_option("--max-jobs", args->max_jobs,
                  "replay only the first N jobs by submit time (0 = all)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-interval", args->checkpoint_interval_s,
                  "seconds between checkpoints for jobs whose trace gives none; a preempted job "
                  "loses the work since its last one")
      ->capture_default_str();
  cmd->add_option("--restart-delay", args->restart_delay_s,
                  "seconds a preempted job needs to start again")
      ->capture_default_str();
  cmd->add_option("--grace-period", args->grace_period_s,
                  "seconds between a preemption notice and the stop")
      ->capture_default_str();
  cmd->add_option("--runtime-limit", args->runtime_limit,
                  "runtime limits when the trace has none: exact, rounded or none")
      ->check(CLI::IsMember({"exact", "rounded", "none"}))
      ->capture_default_str();
  cmd->add_option("--gittins-prior", args->gittins_prior,
                  "file of GPU-time samples (s): tiresias then orders by 2D-Gittins");
  cmd->add_option("--min-runtime", args->min_runtime_s,
                  "seconds a job's attempt runs before it may be preempted (every preemptive "
                  "policy; 0 = at once)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--max-victim-searches", args->max_victim_searches,
                  "victim searches per scheduling round; jobs ranked below wait for the next "
                  "round (0 = no limit)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--goodput-round", args->goodput_round_s,
                  "goodput: seconds between reallocation rounds while jobs run")
      ->check(CLI::Range(1.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--restart-gain", args->restart_gain,
                  "goodput: a running job is restarted on a new allocation only when its modelled "
                  "speed rises by at least this share (0.25 = 25%)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--fair-half-life", args->fair_half_life_s,
                  "fair: seconds of half-life of each team's past GPU usage in the team order (0 "
                  "= current usage only)")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  cmd->add_option("--tiresias-thresholds", args->tiresias_thresholds,
                  "tiresias queue boundaries in attained GPU-seconds, increasing, comma-separated")
      ->capture_default_str();
  cmd->add_option("--starvation-factor", args->starvation_factor,
                  "tiresias promotes a job waiting longer than this many times its last run to "
                  "the first queue (0 = never)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_flag("--save-on-notice", args->save_on_notice,
                "jobs save a checkpoint when their preemption notice comes (as trainyard's SDK "
                "does), so a preemption loses no work; without it a preempted job loses the work "
                "since its last periodic checkpoint");
  cmd->add_flag("--allow-unfinished", args->allow_unfinished,
                "exit 0 even when some jobs can never fit the cluster (they are listed as "
                "unfinished in the table)");
  cmd->add_flag("--check-invariants", args->check_invariants,
                "check every plan against the scheduler's invariants (slower)");
  add_cost_sim_options(cmd, args->cost);
  return [args] { return run(*args); };
}

}  // namespace trainyard::cli
