#include "sched/policy.h"

#include <array>

#include <fmt/format.h>

namespace trainyard::sched {
namespace {

constexpr std::array<PolicyTraits, 7> kPolicies{{
    {"fifo", "first come first served, strict: a job that does not fit blocks the queue",
     QueueOrderKind::Arrival, VictimRule::None, true, false},
    {"backfill", "FIFO with EASY backfill on runtime limits (Slurm's default)",
     QueueOrderKind::Arrival, VictimRule::None, false, true},
    {"srtf",
     "shortest remaining time first, preemptive (the simulator's oracle: an upper bound for "
     "average JCT; the server's: what is left of each job's time limit)",
     QueueOrderKind::RemainingTime, VictimRule::LongerRemaining, false, false},
    {"tiresias", "Tiresias 2D-LAS (2D-Gittins with a GPU-time prior), preemptive",
     QueueOrderKind::Tiresias, VictimRule::LowerServiceQueue, false, false},
    {"fair", "weighted dominant-resource fair share across teams, quotas, borrowing, reclaim",
     QueueOrderKind::DominantShare, VictimRule::QuotaReclaim, false, false},
    {"priority", "strict priority classes; preempts lower classes (grace period applies)",
     QueueOrderKind::Priority, VictimRule::LowerPriority, false, false},
    {"goodput",
     "goodput- and heterogeneity-aware: GPU type, count and batch size per job by modelled "
     "speed-up (Pollux's p = -1 power mean), elastic jobs resized at restarts",
     QueueOrderKind::Goodput, VictimRule::Reallocate, false, false},
}};

}  // namespace

std::span<const PolicyTraits> policies() {
  return kPolicies;
}

util::Result<PolicyTraits> find_policy(std::string_view name) {
  for (const auto& p : kPolicies) {
    if (p.name == name) return p;
  }
  return util::invalid_argument(fmt::format(
      "unknown policy '{}'; choose one of fifo, backfill, srtf, tiresias, fair, priority, goodput",
      name));
}

}  // namespace trainyard::sched
