// QuotaLedger: nominal quota, borrowing within a cohort up to a limit, per-model quotas, MIG
// accounting, derived equal shares for the fair policy and weighted dominant shares.
#include "sched/admission.h"

#include <gtest/gtest.h>

#include "tests/sched/snapshot_for_test.h"

namespace trainyard::sched {
namespace {

using testing::JobOpts;
using testing::SnapshotForTest;

// `count` whole GPUs of node `node_idx` starting at GPU `first`, one worker.
std::vector<Assignment> gpus(int node_idx, int count, int first = 0) {
  std::vector<Assignment> out;
  for (int g = first; g < first + count; ++g) {
    out.push_back({.node_idx = node_idx, .gpu_idx = static_cast<int16_t>(g), .milli = 1000});
  }
  return out;
}

SnapshotJob team_job(const Snapshot& snap, const std::string& team) {
  SnapshotJob j;
  j.team = find_team(snap, team);
  return j;
}

TEST(QuotaLedger, AdmitsNominalPlusBorrowableUpToLimit) {
  auto b = SnapshotForTest().node("n1", 8, "H100").team("a", 1, "c", 2, 1).team("b", 1, "c", 6);
  const Snapshot snap = b.build();
  const QuotaLedger ledger(snap, false);
  const SnapshotJob j = team_job(snap, "a");
  EXPECT_TRUE(ledger.check(j, gpus(0, 3)).admitted);  // 2 nominal + 1 borrowed
  const QuotaVerdict v = ledger.check(j, gpus(0, 4));
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(v.over_milli, 1000);
  EXPECT_EQ(v.key, 1);  // the all-models key (1 model + 1)
}

TEST(QuotaLedger, WithoutCohortThereIsNothingToBorrow) {
  const Snapshot snap = SnapshotForTest().node("n1", 8, "H100").team("a", 1, "", 2).build();
  const QuotaLedger ledger(snap, false);
  EXPECT_TRUE(ledger.check(team_job(snap, "a"), gpus(0, 2)).admitted);
  EXPECT_EQ(ledger.check(team_job(snap, "a"), gpus(0, 3)).over_milli, 1000);
}

TEST(QuotaLedger, CountsRunningJobsAndUpdatesWithAdd) {
  auto b = SnapshotForTest().node("n1", 8, "H100").team("a", 1, "c", 4).team("b", 1, "c", 4);
  b.running(1, {.gpus = 6, .team = "b"}, {{"n1", {0, 1, 2, 3, 4, 5}}});
  const Snapshot snap = b.build();
  QuotaLedger ledger(snap, false);
  const int b_idx = find_team(snap, "b");
  EXPECT_EQ(ledger.usage(b_idx, 0), 6000);
  EXPECT_EQ(ledger.usage(b_idx, 1), 6000);
  EXPECT_TRUE(ledger.borrowing(b_idx));
  EXPECT_FALSE(ledger.borrowing(find_team(snap, "a")));
  // a's nominal 4 is a's whatever b borrowed: 2 GPUs stay within it, 5 do not.
  const SnapshotJob a = team_job(snap, "a");
  EXPECT_TRUE(ledger.within_nominal_after(a, gpus(0, 2, 6)));
  EXPECT_FALSE(ledger.within_nominal_after(a, gpus(0, 5)));
  ledger.add(a, gpus(0, 2, 6), +1);
  EXPECT_EQ(ledger.usage(find_team(snap, "a"), 1), 2000);
  ledger.add(a, gpus(0, 2, 6), -1);
  EXPECT_EQ(ledger.usage(find_team(snap, "a"), 1), 0);
}

TEST(QuotaLedger, LendsOnlyQuotaNoOneBorrowedYet) {
  // Cohort: a 4 (unused), b 2, d 2. b runs 6, i.e. it already borrows all of a's 4.
  auto b = SnapshotForTest()
               .node("n1", 8, "H100")
               .node("n2", 8, "H100")
               .team("a", 1, "c", 4)
               .team("b", 1, "c", 2)
               .team("d", 1, "c", 2);
  b.running(1, {.gpus = 6, .team = "b"}, {{"n1", {0, 1, 2, 3, 4, 5}}});
  const Snapshot snap = b.build();
  const QuotaLedger ledger(snap, false);
  const SnapshotJob d = team_job(snap, "d");
  EXPECT_TRUE(ledger.check(d, gpus(1, 2)).admitted);
  EXPECT_EQ(ledger.check(d, gpus(1, 4)).over_milli, 2000);
}

TEST(QuotaLedger, PerModelQuotaAndMigAccounting) {
  auto b = SnapshotForTest().node("h", 8, "H100").node("m", 1, "A100-80GB", {.mig = true});
  model::Team t;
  t.name = "a";
  t.quotas["H100"] = {model::GpuMilli(2000), model::GpuMilli(-1)};
  t.quotas[model::kAnyGpuModel] = {model::GpuMilli(8000), model::GpuMilli(-1)};
  add_team(b.raw(), t);
  const Snapshot snap = b.build();
  const QuotaLedger ledger(snap, false);
  const SnapshotJob a = team_job(snap, "a");
  const QuotaVerdict v = ledger.check(a, gpus(0, 3));
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(v.key, 0);  // the H100 entry
  EXPECT_EQ(v.over_milli, 1000);
  // A 3g.40gb instance counts as 3/7 of a GPU against the A100 and all-model keys.
  SnapshotJob mig = a;
  mig.worker.mig_profile = "3g.40gb";
  const std::vector<Assignment> inst = {
      {.node_idx = 1, .gpu_idx = 0, .mig_profile = 3, .mig_start = 0}};
  QuotaLedger l2(snap, false);
  l2.add(mig, inst, +1);
  EXPECT_EQ(l2.usage(find_team(snap, "a"), 1), 3000 / 7);
  EXPECT_EQ(l2.usage(find_team(snap, "a"), 2), 3000 / 7);
}

TEST(QuotaLedger, QuotaForModelWithoutNodesKeepsOtherEntriesInPlace) {
  // Team b names a model no node has. Team a's all-model quota must stay the last entry, and
  // every team must have one entry per key.
  auto b = SnapshotForTest().node("n1", 8, "H100").team("a", 1, "", 4);
  model::Team t;
  t.name = "b";
  t.quotas["A100-80GB"] = {model::GpuMilli(2000), model::GpuMilli(-1)};
  add_team(b.raw(), t);
  const Snapshot snap = b.build();
  for (const SnapshotTeam& team : snap.teams) {
    if (!team.quota.empty()) {
      EXPECT_EQ(team.quota.size(), snap.gpu_models.size() + 1) << team.name;
    }
  }
  const QuotaLedger ledger(snap, false);
  EXPECT_EQ(ledger.nominal(find_team(snap, "a"), static_cast<int>(snap.gpu_models.size())), 4000);
  EXPECT_EQ(ledger.check(team_job(snap, "a"), gpus(0, 5)).over_milli, 1000);
}

TEST(QuotaLedger, DerivesEqualWeightedSharesThatCoverCapacity) {
  const Snapshot snap =
      SnapshotForTest().node("n1", 8, "H100").team("a").team("b").team("c", 2.0).build();
  const QuotaLedger ledger(snap, true);
  EXPECT_TRUE(ledger.has_quotas());
  EXPECT_EQ(ledger.nominal(0, 1), 2000);
  EXPECT_EQ(ledger.nominal(1, 1), 2000);
  EXPECT_EQ(ledger.nominal(2, 1), 4000);
  EXPECT_TRUE(ledger.same_cohort(0, 2));
  // Equal thirds of 8000 round to 2667 + 2667 + 2666: the whole cluster stays admissible.
  const Snapshot thirds =
      SnapshotForTest().node("n1", 8, "H100").team("a").team("b").team("c").build();
  const QuotaLedger l3(thirds, true);
  EXPECT_EQ(l3.nominal(0, 1) + l3.nominal(1, 1) + l3.nominal(2, 1), 8000);
  EXPECT_TRUE(l3.check(team_job(thirds, "c"), gpus(0, 8)).admitted);
  // Without derive_equal_shares, teams without quotas are unlimited.
  EXPECT_FALSE(QuotaLedger(thirds, false).has_quotas());
}

TEST(QuotaLedger, DominantShareIsLargestModelShareOverWeight) {
  auto b = SnapshotForTest().node("h", 8, "H100").node("l", 4, "L4").team("a", 2.0).team("b");
  b.running(1, {.gpus = 4, .team = "a"}, {{"h", {0, 1, 2, 3}}});
  b.running(2, {.gpus = 1, .team = "a"}, {{"l", {0}}});
  b.running(3, {.gpus = 3, .team = "b"}, {{"l", {1, 2, 3}}});
  const Snapshot snap = b.build();
  const QuotaLedger ledger(snap, true);
  EXPECT_DOUBLE_EQ(ledger.dominant_share(0), 0.5 / 2.0);  // max(4/8, 1/4) / 2
  EXPECT_DOUBLE_EQ(ledger.dominant_share(1), 0.75);       // 3/4
  EXPECT_DOUBLE_EQ(ledger.dominant_share(-1), 0.0);
}

}  // namespace
}  // namespace trainyard::sched
