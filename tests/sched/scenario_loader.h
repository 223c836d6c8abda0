// Loads a scheduler scenario file (tests/sched/scenarios/*.yaml): a policy with its knobs, a
// snapshot and the expected plan. Every mapping is checked against its known keys, so a typo
// is an error instead of a silently ignored field. Units: seconds, cores, GiB, whole GPUs
// (quotas) and milli-GPUs (fractional requests). See tests/sched/scenarios/README.md.
#pragma once

#include <cmath>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "sched/plan.h"
#include "sched/policy.h"
#include "sched/policy_config.h"
#include "sched/snapshot.h"
#include "sched/snapshot_builder.h"
#include "util/status.h"

namespace trainyard::sched::testing {

struct ExpectedStart {
  int64_t job = 0;
  std::optional<std::set<std::string>> nodes;                // exact set of nodes used
  std::optional<std::map<std::string, std::set<int>>> gpus;  // exact GPUs per node
  std::optional<std::multiset<int>> mig_starts;              // MIG start slices, any order
  std::optional<int> workers;  // an elastic job's workers for this attempt (StartAction::workers)
};

struct ExpectedPreemption {
  int64_t job = 0;
  std::optional<int64_t> for_job;
  std::optional<PreemptCause> cause;
};

struct ExpectedWait {
  WaitCode code = WaitCode::Unexamined;
  std::optional<Stage> stage;
  std::optional<int64_t> arg;
  std::optional<uint8_t> filter;
};

struct Scenario {
  std::string file;
  std::string description;
  PolicyConfig cfg;
  Snapshot snap;
  std::vector<ExpectedStart> starts;
  std::vector<ExpectedPreemption> preemptions;
  std::map<int64_t, ExpectedWait> waiting;
};

inline constexpr std::pair<const char*, uint8_t> kFilterNames[] = {
    {"gpu_model", 1}, {"selector", 2},       {"cpu", 4}, {"memory", 8}, {"gpus", 16},
    {"mig", 32},      {"unschedulable", 64},
};

namespace scenario_internal {

struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const {
    throw LoadError(fmt::format("{}:{}: {}", file_, n.Mark().line + 1, msg));
  }
  void only_keys(const YAML::Node& map, const std::string& where,
                 std::initializer_list<const char*> known) const {
    if (!map.IsMap()) fail(map, where + " must be a mapping");
    for (const auto& kv : map) {
      const auto key = kv.first.as<std::string>();
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) {
        std::string names;
        for (const char* k : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", k);
        fail(kv.first, fmt::format("{}: unknown key '{}' (known: {})", where, key, names));
      }
    }
  }
  template <typename T>
  T get(const YAML::Node& n, const std::string& what) const {
    try {
      return n.as<T>();
    } catch (const YAML::Exception&) {
      fail(n, fmt::format("{}: cannot read '{}'", what, YAML::Dump(n)));
    }
  }
  template <typename T>
  T opt(const YAML::Node& map, const char* key, T fallback) const {
    const YAML::Node n = map[key];
    return n ? get<T>(n, key) : fallback;
  }
  std::vector<int> ints(const YAML::Node& n, const std::string& what) const {
    if (!n.IsSequence()) fail(n, what + " must be a list");
    std::vector<int> out;
    for (const auto& x : n) out.push_back(get<int>(x, what));
    return out;
  }
  model::Labels labels(const YAML::Node& n, const std::string& what) const {
    if (!n) return {};
    if (!n.IsMap()) fail(n, what + " must be a mapping");
    model::Labels out;
    for (const auto& kv : n)
      out[get<std::string>(kv.first, what)] = get<std::string>(kv.second, what);
    return out;
  }

 private:
  std::string file_;
};

inline util::Duration secs(double s) {
  return util::seconds_f(s);
}

inline void read_policy(const Reader& r, const YAML::Node& root, PolicyConfig& cfg) {
  cfg.name = r.get<std::string>(root["policy"], "policy");
  if (!find_policy(cfg.name).is_ok()) r.fail(root["policy"], "unknown policy " + cfg.name);
  const std::string placement = r.opt<std::string>(root, "placement", "pack");
  if (placement != "pack" && placement != "spread") r.fail(root["placement"], "pack or spread");
  cfg.placement = placement == "pack" ? PlacementStrategy::Pack : PlacementStrategy::Spread;
  // Scenarios state one rule each: victims are eligible at once unless a scenario sets it.
  cfg.min_runtime = secs(r.opt<double>(root, "min_runtime", 0));
  cfg.max_victim_searches = r.opt<int>(root, "max_victim_searches", cfg.max_victim_searches);
  if (const YAML::Node t = root["tiresias"]) {
    r.only_keys(t, "tiresias", {"queue_thresholds", "starvation_factor", "gittins_prior"});
    if (t["queue_thresholds"])
      cfg.tiresias.queue_thresholds =
          r.get<std::vector<double>>(t["queue_thresholds"], "thresholds");
    cfg.tiresias.starvation_factor =
        r.opt<double>(t, "starvation_factor", cfg.tiresias.starvation_factor);
    if (t["gittins_prior"])
      cfg.tiresias.gittins_prior = r.get<std::vector<double>>(t["gittins_prior"], "gittins_prior");
  }
  if (const YAML::Node f = root["fair"]) {
    r.only_keys(f, "fair", {"reclaim"});
    cfg.fair.reclaim = r.opt<bool>(f, "reclaim", true);
  }
  if (const YAML::Node g = root["goodput"]) {
    r.only_keys(g, "goodput", {"restart_gain", "attained_weight"});
    cfg.goodput.restart_gain = r.opt<double>(g, "restart_gain", cfg.goodput.restart_gain);
    cfg.goodput.attained_weight = r.opt<double>(g, "attained_weight", cfg.goodput.attained_weight);
  }
}

inline void read_nodes(const Reader& r, const YAML::Node& nodes, Snapshot& snap) {
  if (!nodes.IsSequence()) r.fail(nodes, "nodes must be a list");
  for (const auto& n : nodes) {
    r.only_keys(
        n, "nodes[]",
        {"name", "gpus", "model", "cpu", "memory_gib", "rack", "mig", "labels", "schedulable"});
    model::Node node;
    node.id = util::NodeId(static_cast<int64_t>(snap.nodes.size()) + 1);
    node.name = r.get<std::string>(n["name"], "name");
    node.gpu_count = r.opt<int>(n, "gpus", 0);
    node.gpu_model = r.opt<std::string>(n, "model", "");
    if (node.gpu_count > 0 && node.gpu_model.empty()) r.fail(n, node.name + ": gpus need a model");
    node.cpu = model::CpuMilli(std::llround(r.opt<double>(n, "cpu", 64) * 1000));
    node.memory = model::gib(r.opt<int64_t>(n, "memory_gib", 512));
    node.rack = r.opt<std::string>(n, "rack", "");
    node.mig_enabled = r.opt<bool>(n, "mig", false);
    node.labels = r.labels(n["labels"], "labels");
    node.state =
        r.opt<bool>(n, "schedulable", true) ? model::NodeState::Ready : model::NodeState::Draining;
    add_node(snap, node);
  }
}

inline void read_teams(const Reader& r, const YAML::Node& teams, Snapshot& snap) {
  if (!teams) return;
  if (!teams.IsSequence()) r.fail(teams, "teams must be a list");
  for (const auto& t : teams) {
    r.only_keys(t, "teams[]", {"name", "weight", "cohort", "quota", "past_usage_share"});
    model::Team team;
    team.name = r.get<std::string>(t["name"], "name");
    team.weight = r.opt<double>(t, "weight", 1.0);
    team.cohort = r.opt<std::string>(t, "cohort", "");
    if (const YAML::Node q = t["quota"]) {
      if (!q.IsMap())
        r.fail(q, "quota must map a GPU model (or \"*\") to {nominal, borrowing_limit}");
      for (const auto& kv : q) {
        r.only_keys(kv.second, "quota entry", {"nominal", "borrowing_limit"});
        const double nominal = r.get<double>(kv.second["nominal"], "nominal");
        const double limit = r.opt<double>(kv.second, "borrowing_limit", -1);
        team.quotas[r.get<std::string>(kv.first, "quota model")] = {
            model::GpuMilli(std::llround(nominal * 1000)),
            model::GpuMilli(limit < 0 ? -1 : std::llround(limit * 1000))};
      }
    }
    add_team(snap, team);
    snap.teams.back().past_usage_share = r.opt<double>(t, "past_usage_share", 0.0);
  }
}

inline int node_index(const Reader& r, const YAML::Node& n, const Snapshot& snap) {
  const auto name = r.get<std::string>(n, "node");
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    if (snap.nodes[i].name == name) return static_cast<int>(i);
  }
  r.fail(n, "unknown node " + name);
}

// A running job's placement: one entry per worker, {node, gpus: [...], mig_start}.
inline void read_placement(const Reader& r, const YAML::Node& list, const Snapshot& snap,
                           SnapshotJob& job) {
  if (!list || !list.IsSequence() || static_cast<int>(list.size()) != job.workers)
    r.fail(list ? list : YAML::Node(), fmt::format("job {}: running jobs need a placement list "
                                                   "with one entry per worker",
                                                   job.id.value()));
  int worker = 0;
  for (const auto& w : list) {
    r.only_keys(w, "placement[]", {"node", "gpus", "mig_start"});
    const int node_idx = node_index(r, w["node"], snap);
    Assignment a{.worker = worker, .node_idx = node_idx};
    if (!job.worker.mig_profile.empty()) {
      const model::Accelerator* accel = snap.accelerators[snap.nodes[node_idx].gpu_model];
      for (size_t p = 0; accel && p < accel->mig_profiles.size(); ++p) {
        if (accel->mig_profiles[p].name == job.worker.mig_profile) a.mig_profile = int8_t(p);
      }
      if (a.mig_profile < 0) r.fail(w, "MIG profile not offered by the node's GPU");
      a.mig_start = static_cast<int8_t>(r.get<int>(w["mig_start"], "mig_start"));
    } else if (w["mig_start"]) {
      r.fail(w, "mig_start only for MIG jobs");
    }
    const std::vector<int> gpus = w["gpus"] ? r.ints(w["gpus"], "gpus") : std::vector<int>{};
    const int milli = job.worker.gpus > 0 ? 1000 : static_cast<int>(job.worker.gpu_milli.value());
    for (int g : gpus) {
      a.gpu_idx = static_cast<int16_t>(g);
      a.milli = static_cast<int16_t>(a.mig_profile >= 0 ? 0 : milli);
      job.placement.push_back(a);
    }
    if (gpus.empty()) job.placement.push_back(a);  // CPU-only worker
    ++worker;
  }
}

inline void read_job(const Reader& r, const YAML::Node& j, Snapshot& snap) {
  r.only_keys(j, "jobs[]",
              {"id",
               "phase",
               "gpus",
               "workers",
               "min_workers",
               "max_workers",
               "measured",
               "milli",
               "mig",
               "cpu",
               "memory_gib",
               "priority",
               "preemptible",
               "team",
               "submitted",
               "queued_since",
               "started",
               "runtime_limit",
               "remaining",
               "attained_gpu_seconds",
               "last_run",
               "models",
               "selector",
               "waiting_on",
               "checkpoint_interval",
               "last_checkpoint",
               "placement"});
  model::JobSpec spec;
  const auto id = r.get<int64_t>(j["id"], "id");
  spec.team = r.opt<std::string>(j, "team", "");
  if (!spec.team.empty() && find_team(snap, spec.team) < 0) r.fail(j["team"], "unknown team");
  spec.priority = r.opt<int>(j, "priority", 0);
  spec.preemptible = r.opt<bool>(j, "preemptible", true);
  spec.workers = r.opt<int>(j, "workers", 1);
  spec.min_workers = r.opt<int>(j, "min_workers", 0);
  spec.max_workers = r.opt<int>(j, "max_workers", 0);
  spec.worker.gpu_milli = model::GpuMilli(r.opt<int>(j, "milli", 0));
  spec.worker.mig_profile = r.opt<std::string>(j, "mig", "");
  const bool other_form = spec.worker.gpu_milli.value() > 0 || !spec.worker.mig_profile.empty();
  spec.worker.gpus = r.opt<int>(j, "gpus", other_form ? 0 : 1);
  if (other_form && spec.worker.gpus > 0) r.fail(j, "use one of gpus, milli, mig");
  spec.worker.cpu = model::CpuMilli(std::llround(r.opt<double>(j, "cpu", 0) * 1000));
  spec.worker.memory = model::gib(r.opt<int64_t>(j, "memory_gib", 0));
  if (j["models"]) spec.allowed_gpu_models = r.get<std::vector<std::string>>(j["models"], "models");
  spec.node_selector = r.labels(j["selector"], "selector");
  spec.runtime_limit = secs(r.opt<double>(j, "runtime_limit", 0));
  spec.checkpoint_interval = secs(r.opt<double>(j, "checkpoint_interval", 0));
  SnapshotJob job = make_pending_job(snap, util::JobId(id), spec,
                                     util::from_seconds(r.opt<double>(j, "submitted", 0)));
  job.queued_since =
      util::from_seconds(r.opt<double>(j, "queued_since", util::to_seconds(job.submitted)));
  job.started = util::from_seconds(r.opt<double>(j, "started", 0));
  if (j["remaining"]) job.remaining = secs(r.get<double>(j["remaining"], "remaining"));
  job.attained_gpu_time = secs(r.opt<double>(j, "attained_gpu_seconds", 0));
  job.last_run = secs(r.opt<double>(j, "last_run", 0));
  if (const YAML::Node m = j["measured"]) {  // {workers: steps per second}
    if (!m.IsMap()) r.fail(m, "measured maps worker counts to steps per second");
    for (const auto& kv : m)
      job.measured.push_back({.workers = r.get<int>(kv.first, "workers"),
                              .steps_per_second = r.get<double>(kv.second, "steps per second")});
    std::sort(job.measured.begin(), job.measured.end(),
              [](const auto& a, const auto& b) { return a.workers < b.workers; });
  }
  job.waiting_on = util::JobId(r.opt<int64_t>(j, "waiting_on", -1));
  if (j["last_checkpoint"]) {
    job.last_checkpoint =
        util::from_seconds(r.get<double>(j["last_checkpoint"], "last_checkpoint"));
  }
  const std::string phase = r.opt<std::string>(j, "phase", "pending");
  if (phase == "pending") {
    if (j["placement"]) r.fail(j["placement"], "pending jobs have no placement");
  } else if (phase == "running" || phase == "preempting") {
    job.phase = phase == "running" ? JobPhase::Running : JobPhase::Preempting;
    read_placement(r, j["placement"], snap, job);
  } else {
    r.fail(j["phase"], "phase is pending, running or preempting");
  }
  snap.jobs.push_back(std::move(job));
}

template <typename E, size_t N>
E enum_by_name(const Reader& r, const YAML::Node& n, const E (&values)[N],
               std::string_view (*name)(E)) {
  const auto text = r.get<std::string>(n, "name");
  for (E v : values) {
    if (name(v) == text) return v;
  }
  r.fail(n, "unknown name " + text);
}

inline constexpr WaitCode kWaitCodes[] = {
    WaitCode::DependencyUnfinished, WaitCode::QuotaExceeded,
    WaitCode::NoCapacityNow,        WaitCode::NeverFits,
    WaitCode::HeadOfLine,           WaitCode::BackfillWouldDelay,
    WaitCode::AwaitingVictims,      WaitCode::Unexamined,
    WaitCode::PreemptionDeferred};
inline constexpr Stage kStages[] = {Stage::Dependency, Stage::Admission, Stage::Placement,
                                    Stage::Preemption, Stage::Backfill,  Stage::Order};

inline std::string_view cause_key(PreemptCause c) {
  switch (c) {
    case PreemptCause::HigherPriority:
      return "HigherPriority";
    case PreemptCause::ShorterRemaining:
      return "ShorterRemaining";
    case PreemptCause::LowerServiceQueue:
      return "LowerServiceQueue";
    case PreemptCause::QuotaReclaim:
      return "QuotaReclaim";
    case PreemptCause::Resize:
      return "Resize";
  }
  return "?";
}
inline constexpr PreemptCause kCauses[] = {
    PreemptCause::HigherPriority, PreemptCause::ShorterRemaining, PreemptCause::LowerServiceQueue,
    PreemptCause::QuotaReclaim, PreemptCause::Resize};

inline ExpectedStart read_expected_start(const Reader& r, const YAML::Node& s) {
  if (s.IsScalar()) return {.job = r.get<int64_t>(s, "start")};
  r.only_keys(s, "expect.starts[]", {"job", "nodes", "gpus", "mig_starts", "workers"});
  ExpectedStart e{.job = r.get<int64_t>(s["job"], "job")};
  if (s["workers"]) e.workers = r.get<int>(s["workers"], "workers");
  if (s["nodes"]) {
    const auto names = r.get<std::vector<std::string>>(s["nodes"], "nodes");
    e.nodes.emplace(names.begin(), names.end());
  }
  if (const YAML::Node g = s["gpus"]) {
    if (!g.IsMap()) r.fail(g, "gpus maps node names to GPU lists");
    e.gpus.emplace();
    for (const auto& kv : g) {
      const std::vector<int> list = r.ints(kv.second, "gpus");
      (*e.gpus)[r.get<std::string>(kv.first, "node")] = {list.begin(), list.end()};
    }
  }
  if (s["mig_starts"]) {
    const std::vector<int> list = r.ints(s["mig_starts"], "mig_starts");
    e.mig_starts.emplace(list.begin(), list.end());
  }
  return e;
}

inline ExpectedWait read_expected_wait(const Reader& r, const YAML::Node& w) {
  if (w.IsScalar()) return {.code = enum_by_name(r, w, kWaitCodes, wait_code_name)};
  r.only_keys(w, "expect.waiting entry", {"code", "stage", "arg", "filter"});
  ExpectedWait e{.code = enum_by_name(r, w["code"], kWaitCodes, wait_code_name)};
  if (w["stage"]) e.stage = enum_by_name(r, w["stage"], kStages, stage_name);
  if (w["arg"]) e.arg = r.get<int64_t>(w["arg"], "arg");
  if (w["filter"]) {
    const auto name = r.get<std::string>(w["filter"], "filter");
    for (const auto& [n, bit] : kFilterNames) {
      if (name == n) e.filter = bit;
    }
    if (!e.filter) r.fail(w["filter"], "unknown filter " + name);
  }
  return e;
}

inline void read_expect(const Reader& r, const YAML::Node& x, Scenario& sc) {
  r.only_keys(x, "expect", {"starts", "preemptions", "waiting"});
  if (!x["starts"] || !x["preemptions"])
    r.fail(x, "expect needs starts and preemptions (use [] for none)");
  for (const auto& s : x["starts"]) sc.starts.push_back(read_expected_start(r, s));
  for (const auto& p : x["preemptions"]) {
    if (p.IsScalar()) {
      sc.preemptions.push_back({.job = r.get<int64_t>(p, "preemption")});
      continue;
    }
    r.only_keys(p, "expect.preemptions[]", {"job", "for", "cause"});
    ExpectedPreemption e{.job = r.get<int64_t>(p["job"], "job")};
    if (p["for"]) e.for_job = r.get<int64_t>(p["for"], "for");
    if (p["cause"]) e.cause = enum_by_name(r, p["cause"], kCauses, cause_key);
    sc.preemptions.push_back(e);
  }
  if (const YAML::Node w = x["waiting"]) {
    if (!w.IsMap()) r.fail(w, "expect.waiting maps job ids to wait codes");
    for (const auto& kv : w)
      sc.waiting[r.get<int64_t>(kv.first, "job id")] = read_expected_wait(r, kv.second);
  }
}

inline Scenario read_scenario(const Reader& r, const YAML::Node& root, std::string file) {
  r.only_keys(root, "scenario",
              {"description", "policy", "placement", "min_runtime", "max_victim_searches",
               "tiresias", "fair", "goodput", "now", "nodes", "teams", "jobs", "expect"});
  Scenario sc;
  sc.file = std::move(file);
  sc.description = r.get<std::string>(root["description"], "description");
  read_policy(r, root, sc.cfg);
  sc.snap.now = util::from_seconds(r.opt<double>(root, "now", 0));
  read_nodes(r, root["nodes"], sc.snap);
  read_teams(r, root["teams"], sc.snap);
  if (!root["jobs"].IsSequence()) r.fail(root, "jobs must be a list");
  for (const auto& j : root["jobs"]) read_job(r, j, sc.snap);
  read_expect(r, root["expect"], sc);
  return sc;
}

}  // namespace scenario_internal

// Parses `text` (named `file` in messages). Errors name the file and line.
inline util::Result<Scenario> parse_scenario(const std::string& text, const std::string& file) {
  scenario_internal::Reader reader(file);
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root["description"] || !root["policy"] || !root["nodes"] || !root["expect"])
      return util::invalid_argument(file + ": needs description, policy, nodes, jobs and expect");
    return scenario_internal::read_scenario(reader, root, file);
  } catch (const scenario_internal::LoadError& e) {
    return util::invalid_argument(e.what());
  } catch (const YAML::Exception& e) {
    return util::invalid_argument(fmt::format("{}: {}", file, e.what()));
  }
}

}  // namespace trainyard::sched::testing
