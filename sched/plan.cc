#include "sched/plan.h"

#include <fmt/format.h>

#include "sched/placement.h"

namespace trainyard::sched {

std::string_view stage_name(Stage s) {
  switch (s) {
    case Stage::Dependency:
      return "dependency";
    case Stage::Admission:
      return "admission";
    case Stage::Placement:
      return "placement";
    case Stage::Preemption:
      return "preemption";
    case Stage::Backfill:
      return "backfill";
    case Stage::Order:
      return "queue-order";
    case Stage::Autoscale:
      return "autoscale";
  }
  return "unknown";
}

std::string_view wait_code_name(WaitCode c) {
  switch (c) {
    case WaitCode::DependencyUnfinished:
      return "DependencyUnfinished";
    case WaitCode::QuotaExceeded:
      return "QuotaExceeded";
    case WaitCode::NoCapacityNow:
      return "NoCapacityNow";
    case WaitCode::NeverFits:
      return "NeverFits";
    case WaitCode::HeadOfLine:
      return "HeadOfLine";
    case WaitCode::BackfillWouldDelay:
      return "BackfillWouldDelay";
    case WaitCode::AwaitingVictims:
      return "AwaitingVictims";
    case WaitCode::BudgetExhausted:
      return "BudgetExhausted";
    case WaitCode::AwaitingNodes:
      return "AwaitingNodes";
    case WaitCode::Unexamined:
      return "Unexamined";
    case WaitCode::PreemptionDeferred:
      return "PreemptionDeferred";
  }
  return "Unknown";
}

std::string_view preempt_cause_name(PreemptCause c) {
  switch (c) {
    case PreemptCause::HigherPriority:
      return "higher-priority job needs the GPUs";
    case PreemptCause::ShorterRemaining:
      return "a job with less remaining time needs the GPUs";
    case PreemptCause::LowerServiceQueue:
      return "demoted to a lower Tiresias queue";
    case PreemptCause::QuotaReclaim:
      return "team under its quota reclaims borrowed GPUs";
    case PreemptCause::Resize:
      return "resized: restarts from its checkpoint with more or fewer GPUs";
  }
  return "unknown";
}

namespace {

std::string filter_text(uint8_t filter) {
  switch (filter) {
    case kFilterGpuModel:
      return "no node has an allowed GPU model";
    case kFilterSelector:
      return "no node matches the node selector";
    case kFilterCpu:
      return "not enough free CPU on nodes with room";
    case kFilterMemory:
      return "not enough free memory on nodes with room";
    case kFilterMig:
      return "no node offers the requested MIG profile with a free slot";
    case kFilterUnschedulable:
      return "matching nodes are not schedulable";
    case kFilterSpot:
      return "only spot nodes match and the job is not preemptible (mark it preemptible to use "
             "them)";
    default:
      return "not enough free GPUs";
  }
}

// The name of team or pool `idx` for a message; "?" when the index is out of range.
template <typename Named>
std::string name_at(const std::vector<Named>& items, int64_t idx) {
  return idx >= 0 && idx < static_cast<int64_t>(items.size()) ? items[idx].name : "?";
}

}  // namespace

std::string describe(const WaitReason& r, const Snapshot& snap) {
  const std::string stage(stage_name(r.stage));
  switch (r.code) {
    case WaitCode::DependencyUnfinished:
      return fmt::format("{}: waits for job {} to succeed", stage, r.arg);
    case WaitCode::QuotaExceeded:
      return fmt::format("{}: team quota (with what the cohort can lend) exceeded by {:.2f} GPUs",
                         stage, static_cast<double>(r.arg) / 1000.0);
    case WaitCode::NoCapacityNow:
      return fmt::format("{}: {} for {:.2f} GPUs now", stage, filter_text(r.filter),
                         static_cast<double>(r.arg) / 1000.0);
    case WaitCode::NeverFits:
      return fmt::format("{}: can never run on this cluster: {}; change the request or add nodes",
                         stage, filter_text(r.filter));
    case WaitCode::HeadOfLine:
      return fmt::format("{}: strict FIFO, queued behind job {} which does not fit", stage, r.arg);
    case WaitCode::BackfillWouldDelay:
      return fmt::format(
          "{}: would delay job {} which holds the reservation; a runtime limit that ends before "
          "the reservation lets it backfill",
          stage, r.arg);
    case WaitCode::AwaitingVictims:
      return fmt::format("{}: {} lower-ranked job(s) are being preempted to make room", stage,
                         r.arg);
    case WaitCode::BudgetExhausted:
      return fmt::format(
          "{}: team {} spent its budget for this period; it starts when the period renews or the "
          "team's budget_usd is raised",
          stage, name_at(snap.teams, r.arg));
    case WaitCode::AwaitingNodes:
      return fmt::format(
          "{}: nodes of pool {} are being provisioned for it; it starts when they are up", stage,
          name_at(snap.pools, r.arg));
    case WaitCode::Unexamined:
      return fmt::format("{}: not reached this cycle", stage);
    case WaitCode::PreemptionDeferred:
      return fmt::format(
          "{}: this cycle's {} victim searches went to higher-ranked jobs; it is searched next "
          "cycle",
          stage, r.arg);
  }
  return stage;
}

}  // namespace trainyard::sched
