// ControlPlane's views of the machine and the queues: `trainyard nodes` and `queues`.
#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/api_cluster_views.h"
#include "sched/policy.h"
#include "sched/snapshot_builder.h"
#include "server/control_plane.h"
#include "server/fleet.h"
#include "server/queue_standing.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

namespace {

using ActiveJobs = std::map<util::JobId, ActiveJob>;

// What one placed worker holds of a GPU: a MIG instance, a fraction, or all of it.
model::GpuShareView share_of(const Placed& a, util::JobId id, const model::Accelerator* acc) {
  model::GpuShareView share{.job = id.value(), .worker = a.worker};
  if (a.mig_profile >= 0 && acc != nullptr &&
      a.mig_profile < static_cast<int>(acc->mig_profiles.size())) {
    const model::MigProfile& p = acc->mig_profiles[a.mig_profile];
    share.mig_profile = std::string(p.name);
    share.mig_start = a.mig_start;
    share.compute_slices = p.compute_slices;
    share.memory_slices = p.memory_slices;
    share.gpu_fraction = model::mig_gpu_fraction(p.compute_slices);
  } else {
    share.gpu_fraction = a.milli > 0 ? a.milli / 1000.0 : 1.0;
  }
  return share;
}

// A node's devices with the jobs on each and what they hold of it; `used`: GPUs with a job.
std::vector<model::NodeDeviceView> node_devices(const LocalNode& n, const ActiveJobs& active,
                                                int& used) {
  std::vector<std::vector<int64_t>> users(n.gpus.size());
  std::vector<std::vector<model::GpuShareView>> shares(n.gpus.size());
  const model::Accelerator* acc = model::find_accelerator(n.node.gpu_model);
  for (const auto& [id, job] : active) {
    for (const auto& a : job.placement) {
      if (a.node != n.node.id || a.gpu_idx < 0 || a.gpu_idx >= static_cast<int>(users.size()))
        continue;
      if (std::find(users[a.gpu_idx].begin(), users[a.gpu_idx].end(), id.value()) ==
          users[a.gpu_idx].end())
        users[a.gpu_idx].push_back(id.value());
      shares[a.gpu_idx].push_back(share_of(a, id, acc));
    }
  }
  std::vector<model::NodeDeviceView> gpus;
  used = 0;
  for (size_t g = 0; g < n.gpus.size(); ++g) {
    const auto& d = n.gpus[g];
    used += users[g].empty() ? 0 : 1;
    gpus.push_back({.index = d.index,
                    .uuid = d.uuid,
                    .name = d.name,
                    .memory_bytes = d.memory.value(),
                    .mig = d.mig_enabled,
                    .jobs = std::move(users[g]),
                    .shares = std::move(shares[g])});
  }
  return gpus;
}

model::NodeView node_view(const LocalNode& n, const ActiveJobs& active) {
  int used = 0;
  std::vector<model::NodeDeviceView> devices = node_devices(n, active, used);
  model::NodeView row{
      .name = n.node.name,
      .gpu_model = n.node.gpu_model,
      .gpus = n.node.gpu_count,
      .gpus_in_use = used,
      .simulated = n.simulated,
      .mig = n.node.mig_enabled,
      .cpu_milli = n.node.cpu.value(),
      .memory_bytes = n.node.memory.value(),
      .labels = n.node.labels,
      .pool = n.node.pool,
      .zone = n.zone,
      .state = n.cloud || n.batch ? std::string(model::node_state_name(n.node.state)) : "ready",
      .price_per_hour = n.price_per_hour,
      .cloud = n.cloud,
      .devices = std::move(devices)};
  if (n.batch) {
    const int outside = std::popcount(n.gpus_held_outside);
    row.gpus_in_use = used + outside;
    row.batch = model::BatchNodeView{
        .executor = "slurm",
        .address = n.address,
        .gpus_held_outside = outside,
        .problem = n.problem.empty() ? std::nullopt : std::optional(n.problem)};
  }
  return row;
}

// Requested and not up yet: shown so a user sees the capacity coming.
void add_provisioning_nodes(const Fleet& fleet, model::NodeListView& out) {
  for (const auto& [id, f] : fleet.nodes()) {
    if (f.state != FleetNodeState::Provisioning) continue;
    const FleetPool& p = fleet.pools()[f.pool];
    out.items.push_back({.name = f.name,
                         .gpu_model = p.pool.gpu_model,
                         .gpus = p.pool.gpus_per_node,
                         .gpus_in_use = 0,
                         .simulated = true,
                         .mig = false,
                         .cpu_milli = p.pool.cpu.value(),
                         .memory_bytes = p.pool.memory.value(),
                         .labels = p.pool.labels,
                         .pool = p.pool.name,
                         .zone = f.zone >= 0 ? p.zones[f.zone].name : "",
                         .state = "provisioning",
                         .price_per_hour = f.price_per_hour,
                         .cloud = true});
  }
}

void add_pools(const Fleet& fleet, model::NodeListView& out) {
  for (const auto& p : fleet.pools()) {
    out.pools.push_back({.name = p.pool.name,
                         .kind = std::string(model::pool_kind_name(p.pool.kind)),
                         .provider = p.pool.provider,
                         .instance_type = p.pool.instance_type,
                         .region = p.pool.region,
                         .gpu_model = p.pool.gpu_model,
                         .gpus_per_node = p.pool.gpus_per_node,
                         .min_nodes = p.pool.min_nodes,
                         .max_nodes = p.pool.max_nodes,
                         .price_per_node_hour = p.pool.price_per_node_hour,
                         .interruptions = p.interruptions});
  }
}

// A queue's row before its standing: the team's settings and its jobs in memory.
struct QueueRow {
  double weight = 1;
  std::string cohort;
  model::GpusByModel quota;
  int pending = 0, running = 0;
  int64_t gpu_milli = 0;
};

// The configured teams with their quotas (nominal GPUs per model).
std::map<std::string, QueueRow> configured_rows(const std::vector<model::Team>& teams) {
  std::map<std::string, QueueRow> rows;
  for (const auto& t : teams) {
    QueueRow& r = rows[t.name];
    r.weight = t.weight;
    r.cohort = t.cohort;
    for (const auto& [model_name, q] : t.quotas)
      r.quota[model_name] = static_cast<double>(q.nominal.value()) / 1000.0;
  }
  return rows;
}

void count_jobs(const ActiveJobs& active, std::map<std::string, QueueRow>& rows) {
  for (const auto& [id, job] : active) {
    QueueRow& r = rows[job.rec.team];
    if (job.workers.empty()) {
      ++r.pending;
    } else {
      ++r.running;
      r.gpu_milli += job.manifest.spec.total_gpu_share().value();
    }
  }
}

// The teams in the order the reconcile loop's snapshot lists them (the fair policy breaks ties
// between equal shares by it) with their decayed past usage.
void add_standing_teams(sched::Snapshot& snap, const std::vector<model::Team>& teams,
                        const ActiveJobs& active, const std::map<std::string, QueueRow>& rows,
                        const std::optional<sched::DecayedUsage>& usage,
                        const std::vector<std::string>& usage_teams) {
  for (const auto& t : teams) sched::add_team(snap, t);
  for (const auto& [id, job] : active) {
    if (sched::find_team(snap, job.rec.team) < 0)
      sched::add_team(snap, model::Team{.name = job.rec.team});
  }
  for (const auto& [name, r] : rows) {
    if (sched::find_team(snap, name) < 0) sched::add_team(snap, model::Team{.name = name});
  }
  for (auto& team : snap.teams) {
    auto it = std::find(usage_teams.begin(), usage_teams.end(), team.name);
    if (usage && it != usage_teams.end())
      team.past_usage_share = usage->share(static_cast<int>(it - usage_teams.begin()));
  }
}

void add_running_jobs(sched::Snapshot& snap, const ActiveJobs& active, const NodeBook& nodes) {
  for (const auto& [id, job] : active) {
    if (job.workers.empty()) continue;
    sched::SnapshotJob sj = sched::make_pending_job(snap, id, job.manifest.spec, job.rec.submitted);
    sj.phase = sched::JobPhase::Running;
    sj.placement = nodes.to_assignments(job.placement);
    snap.jobs.push_back(std::move(sj));
  }
}

std::optional<model::BudgetView> budget_of(const std::vector<model::Team>& teams,
                                           const std::string& name, const CostKeeping& cost) {
  std::optional<model::BudgetView> budget;
  for (const auto& t : teams) {
    if (t.name != name || t.budget_usd <= 0) continue;
    const auto left = cost.budget_left(t.name);
    budget = model::BudgetView{
        .period = t.budget_period == model::Team::BudgetPeriod::Day ? "day" : "month",
        .budget_usd = t.budget_usd,
        .spent_usd = left ? t.budget_usd - *left : 0.0};
  }
  return budget;
}

}  // namespace

nlohmann::json ControlPlane::nodes() const {
  util::MutexLock lock(mu_);
  model::NodeListView out;
  for (size_t idx = 0; idx < nodes_.size(); ++idx)
    out.items.push_back(node_view(nodes_[idx], jobs_.active()));
  if (fleet_) {
    add_provisioning_nodes(*fleet_, out);
    add_pools(*fleet_, out);
  }
  return model::to_json(out);
}

nlohmann::json ControlPlane::queues(const Principal& who) const {
  const std::vector<model::Team>& teams = options_.config.teams;
  std::map<std::string, QueueRow> rows = configured_rows(teams);
  util::MutexLock lock(mu_);
  for (const auto& team : jobs_.teams()) rows[team];
  count_jobs(jobs_.active(), rows);
  // Where each team stands (queue_standing.h): a snapshot of the nodes, the teams and the
  // running jobs' placements.
  sched::Snapshot snap;
  snap.now = clock_.now();
  if (fleet_) fleet_->add_pools(snap);
  for (const auto& n : nodes_) sched::add_node(snap, n.node);
  add_standing_teams(snap, teams, jobs_.active(), rows, usage_, usage_teams_);
  add_running_jobs(snap, jobs_.active(), nodes_);
  const auto traits = sched::find_policy(options_.config.policy.name);
  std::map<std::string, model::QueueStandingView> standing =
      queue_standing(snap, traits.is_ok() && traits->order == sched::QueueOrderKind::DominantShare);
  model::QueueListView out{.policy = options_.config.policy.name};
  for (const auto& [name, r] : rows) {
    if (!who.may_access_team(name)) continue;
    model::QueueView& q = out.items.emplace_back(
        model::QueueView{.name = name,
                         .weight = r.weight,
                         .cohort = r.cohort,
                         .quota = r.quota,
                         .pending = r.pending,
                         .running = r.running,
                         .gpus_in_use = static_cast<double>(r.gpu_milli) / 1000.0});
    if (auto it = standing.find(name); it != standing.end()) q.standing = std::move(it->second);
    q.budget = budget_of(teams, name, cost_);
  }
  return model::to_json(out);
}

}  // namespace trainyard::server
