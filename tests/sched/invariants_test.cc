// Property tests: for every policy and a few hundred random snapshots, plan() keeps the house
// rules (check_plan), accounts for every pending job exactly once, preempts only eligible
// running jobs, and is deterministic: the same plan twice, for any seed, and for any order of
// the snapshot's job vector (policies tie-break by id, never by vector position).
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sched/cluster_state.h"
#include "sched/invariants.h"
#include "sched/placement.h"
#include "sched/plan.h"
#include "sched/queue_order.h"
#include "tests/sched/random_snapshot.h"

namespace trainyard::sched {
namespace {

constexpr uint64_t kSeeds = 400;

// The whole plan as text, in plan order: equal text = equal plan.
std::string plan_text(const Snapshot& snap, const Plan& p) {
  std::string out;
  for (const StartAction& s : p.starts) {
    out += fmt::format("start {}:", s.job.value());
    for (const Assignment& a : s.placement) {
      out += fmt::format(" w{}@{}/{}/{}m/mig{}@{}", a.worker, snap.nodes[a.node_idx].name,
                         a.gpu_idx, a.milli, a.mig_profile, a.mig_start);
    }
    out += "\n";
  }
  for (const PreemptAction& x : p.preemptions) {
    out += fmt::format("preempt {} for {} ({})\n", x.job.value(), x.for_job.value(),
                       preempt_cause_name(x.cause));
  }
  for (const WaitReason& w : p.waiting) {
    out += fmt::format("wait {}: {}/{} arg={} filter={}\n", w.job.value(), stage_name(w.stage),
                       wait_code_name(w.code), w.arg, w.filter);
  }
  return out;
}

PolicyConfig config_for(const std::string& policy, uint64_t seed) {
  PolicyConfig cfg;
  cfg.name = policy;
  if (seed % 5 == 4) cfg.placement = PlacementStrategy::Spread;
  if (seed % 2 == 1) cfg.tiresias.gittins_prior = {100, 500, 2000, 2000, 9000, 40000, 100000};
  if (seed % 7 == 3) cfg.fair.reclaim = false;
  return cfg;
}

const SnapshotJob* find_job(const Snapshot& snap, JobId id) {
  for (const SnapshotJob& j : snap.jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

// Every pending job either starts or waits for exactly one reason; the reasons point at jobs
// that explain them; victims were running, preemptible and eligible under the policy.
std::string check_accounting(const Snapshot& snap, const Plan& p, const PolicyTraits& traits,
                             const PolicyConfig& cfg) {
  std::map<int64_t, int> seen;
  std::map<int64_t, const WaitReason*> reason;
  for (const StartAction& s : p.starts) ++seen[s.job.value()];
  for (const WaitReason& w : p.waiting) {
    ++seen[w.job.value()];
    reason[w.job.value()] = &w;
  }
  for (const SnapshotJob& j : snap.jobs) {
    const int n = seen.contains(j.id.value()) ? seen[j.id.value()] : 0;
    if (j.is_running() && n != 0)
      return fmt::format("running job {} started or waiting", j.id.value());
    if (!j.is_running() && n != 1)
      return fmt::format("pending job {} has {} starts + wait reasons (want 1)", j.id.value(), n);
  }
  if (seen.size() != p.starts.size() + p.waiting.size()) return "plan names a job twice or unknown";
  std::map<int64_t, int64_t> victims_for;
  for (const PreemptAction& x : p.preemptions) {
    const SnapshotJob* v = find_job(snap, x.job);
    const SnapshotJob* f = find_job(snap, x.for_job);
    if (traits.victims == VictimRule::None) return "non-preemptive policy preempted";
    if (traits.victims == VictimRule::Reallocate) {
      // goodput stops elastic jobs to restart them at another size, for no one job; only
      // jobs that may move: running, preemptible, elastic, past their minimum run time.
      if (!v || x.for_job != util::kNoJob || x.cause != PreemptCause::Resize ||
          v->phase != JobPhase::Running || !v->preemptible || !v->elastic() ||
          snap.now - v->started < cfg.min_runtime)
        return fmt::format("bad resize of {}", x.job.value());
      continue;
    }
    if (!v || !f || v->phase != JobPhase::Running || !v->preemptible || f->is_running())
      return fmt::format("bad preemption of {} for {}", x.job.value(), x.for_job.value());
    ++victims_for[x.for_job.value()];
    const bool eligible = traits.victims == VictimRule::LowerPriority ? v->priority < f->priority
                          : traits.victims == VictimRule::LongerRemaining
                              ? v->remaining > f->remaining
                          : traits.victims == VictimRule::LowerServiceQueue
                              ? tiresias_queue(*v, snap.now, cfg.tiresias) >
                                    tiresias_queue(*f, snap.now, cfg.tiresias)
                              : v->team != f->team && v->team >= 0 && f->team >= 0;
    if (!eligible)
      return fmt::format("job {} is not an eligible victim for {}", x.job.value(),
                         x.for_job.value());
  }
  for (const WaitReason& w : p.waiting) {
    const int64_t id = w.job.value();
    if (w.code == WaitCode::AwaitingVictims && traits.victims == VictimRule::Reallocate) {
      // goodput: the job waits for the GPUs of the jobs it stops this plan (all of them).
      // (0 when it awaits only jobs already leaving).
      const bool leaving = std::any_of(snap.jobs.begin(), snap.jobs.end(), [](const auto& j) {
        return j.phase == JobPhase::Preempting;
      });
      if (w.arg != static_cast<int64_t>(p.preemptions.size()) || (w.arg == 0 && !leaving))
        return fmt::format("job {} awaits {} resizes, plan has {}", id, w.arg,
                           p.preemptions.size());
      continue;
    }
    if (w.code == WaitCode::AwaitingVictims) {
      // Victims that are already leaving cost nothing, so a job may await 0 new victims.
      if (w.arg != (victims_for.contains(id) ? victims_for[id] : 0))
        return fmt::format("job {} awaits {} victims, plan preempts {}", id, w.arg,
                           victims_for[id]);
      victims_for.erase(id);
    }
    if (w.code == WaitCode::HeadOfLine || w.code == WaitCode::BackfillWouldDelay) {
      const auto it = reason.find(w.arg);
      if (it == reason.end() || it->second->code != WaitCode::NoCapacityNow)
        return fmt::format("job {} waits behind {}, which is not blocked", id, w.arg);
    }
    if (w.code == WaitCode::DependencyUnfinished &&
        w.arg != find_job(snap, w.job)->waiting_on.value())
      return fmt::format("job {}: wrong dependency", id);
  }
  if (!victims_for.empty()) return "preemption for a job that does not await victims";
  return "";
}

// Starts honour the job's node constraints (check_plan checks capacity, not these), and the
// placement verdicts hold after the plan: a NoCapacityNow job does not fit the cluster with all
// starts applied (capacity only shrinks during a walk; held capacity aside), and a
// NeverFits job does not fit even an empty cluster with every node schedulable.
std::string check_placements(const Snapshot& snap, const Plan& p, const PolicyTraits& traits,
                             const PolicyConfig& cfg) {
  const PlaceOptions opts{.strategy = cfg.placement};
  ClusterState after(snap);
  for (const StartAction& s : p.starts) {
    const SnapshotJob& job = *find_job(snap, s.job);
    for (const Assignment& a : s.placement) {
      const SnapshotNode& n = snap.nodes[a.node_idx];
      const bool model_ok =
          job.gpu_model_mask == 0 || a.gpu_idx < 0 || ((job.gpu_model_mask >> n.gpu_model) & 1);
      if (!n.schedulable || !model_ok || !model::selector_matches(job.node_selector, n.labels))
        return fmt::format("job {} started on {}, which it may not use", s.job.value(), n.name);
      if (job.worker.mig_profile.empty() != (a.mig_profile < 0))
        return fmt::format("job {}: MIG request and assignment disagree", s.job.value());
    }
    after.apply(s.placement, job.worker);
  }
  Snapshot empty = snap;
  std::erase_if(empty.jobs, [](const SnapshotJob& j) { return j.is_running(); });
  for (SnapshotNode& n : empty.nodes) n.schedulable = true;
  const ClusterState empty_state(empty);
  // Capacity held outside the plan's starts (a backfill reservation, or GPUs kept free for a
  // job awaiting victims) may be what a NoCapacityNow job lacks; only check without either.
  // goodput keeps free the GPUs that the jobs it resizes will take when they restart.
  const bool holds = traits.backfill ||
                     std::any_of(p.waiting.begin(), p.waiting.end(),
                                 [](auto& w) { return w.code == WaitCode::AwaitingVictims; }) ||
                     std::any_of(p.preemptions.begin(), p.preemptions.end(),
                                 [](auto& x) { return x.cause == PreemptCause::Resize; });
  for (const WaitReason& w : p.waiting) {
    const SnapshotJob& job = *find_job(snap, w.job);
    if (w.code == WaitCode::NoCapacityNow && !holds && place(job, after, opts).fit == Fit::Fits) {
      return fmt::format("job {} waits for capacity but fits after the plan", w.job.value());
    }
    if (w.code == WaitCode::NeverFits && place(job, empty_state, opts).fit == Fit::Fits)
      return fmt::format("job {} never fits but fits an empty cluster", w.job.value());
  }
  // Strict FIFO starts nothing that ranks behind the job it blocks on.
  for (const WaitReason& w : p.waiting) {
    if (!traits.strict_fifo || w.code != WaitCode::NoCapacityNow) continue;
    const SnapshotJob& head = *find_job(snap, w.job);
    for (const StartAction& s : p.starts) {
      const SnapshotJob& j = *find_job(snap, s.job);
      if (std::tie(j.submitted, j.id) > std::tie(head.submitted, head.id))
        return fmt::format("job {} started behind blocked job {}", j.id.value(), head.id.value());
    }
  }
  return "";
}

class PlanProperties : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanProperties, HoldForRandomSnapshots) {
  const std::string policy = GetParam();
  const PolicyTraits traits = *find_policy(policy);
  int failures = 0;
  struct {
    size_t starts = 0, preemptions = 0;
    std::set<WaitCode> codes;
  } covered;
  for (uint64_t seed = 1; seed <= kSeeds && failures < 3; ++seed) {
    const Snapshot snap = testing::RandomSnapshot(seed).build();
    const PolicyConfig cfg = config_for(policy, seed);
    const Plan p = plan(snap, cfg, seed);
    const std::string text = plan_text(snap, p);
    const std::string where = fmt::format("policy {} seed {}", policy, seed);
    const util::Status ok = check_plan(snap, p, true, cfg.min_runtime);
    if (!ok.is_ok()) {
      ++failures;
      ADD_FAILURE() << where << ": " << ok.to_string() << "\n" << text;
      continue;
    }
    for (const std::string& err :
         {check_accounting(snap, p, traits, cfg), check_placements(snap, p, traits, cfg)}) {
      if (err.empty()) continue;
      ++failures;
      ADD_FAILURE() << where << ": " << err << "\n" << text;
    }
    if (plan_text(snap, plan(snap, cfg, seed + 1000)) != text) {
      ++failures;
      ADD_FAILURE() << where << ": another seed (or a second call) gave another plan";
    }
    covered.starts += p.starts.size();
    covered.preemptions += p.preemptions.size();
    for (const WaitReason& w : p.waiting) covered.codes.insert(w.code);
    Snapshot shuffled = snap;
    std::mt19937_64 rng(seed);
    std::shuffle(shuffled.jobs.begin(), shuffled.jobs.end(), rng);
    const std::string reordered = plan_text(shuffled, plan(shuffled, cfg, seed));
    if (reordered != text) {
      ++failures;
      ADD_FAILURE() << where << ": plan depends on the order of the job vector\n--- in order:\n"
                    << text << "--- shuffled:\n"
                    << reordered;
    }
  }
  // The generator must keep producing interesting snapshots for this policy.
  EXPECT_GT(covered.starts, kSeeds / 4);
  EXPECT_EQ(covered.preemptions > 0, traits.victims != VictimRule::None);
  for (WaitCode c : {WaitCode::NoCapacityNow, WaitCode::NeverFits, WaitCode::QuotaExceeded,
                     WaitCode::DependencyUnfinished}) {
    EXPECT_TRUE(covered.codes.contains(c)) << wait_code_name(c);
  }
  EXPECT_EQ(covered.codes.contains(WaitCode::HeadOfLine), traits.strict_fifo);
  EXPECT_EQ(covered.codes.contains(WaitCode::BackfillWouldDelay), traits.backfill);
  EXPECT_EQ(covered.codes.contains(WaitCode::AwaitingVictims), traits.victims != VictimRule::None);
}

INSTANTIATE_TEST_SUITE_P(Policies, PlanProperties,
                         ::testing::Values("fifo", "backfill", "srtf", "tiresias", "fair",
                                           "priority", "goodput"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace trainyard::sched
