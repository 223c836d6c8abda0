// Cost ledger: hand-computed bills split over GPU shares, and a property test that the parts
// of seeded random schedules add up to the bill exactly.
#include "cloud/cost_ledger.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace trainyard::cloud {
namespace {

using util::kEpoch;
using util::seconds;

constexpr util::Duration kHour = seconds(3600);

TEST(CostLedger, HalfUsedOneGpuNodeSplitsEvenly) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("n1", "spot", 1, 3.06, kEpoch).is_ok());
  ASSERT_TRUE(
      ledger.set_shares("n1", {{.job = "j1", .team = "ml", .gpu_milli = 500}}, kEpoch).is_ok());
  ASSERT_TRUE(ledger.node_down("n1", kEpoch + kHour).is_ok());
  ASSERT_TRUE(ledger.check_balanced().is_ok());
  CostReport rep = ledger.report();
  EXPECT_DOUBLE_EQ(rep.total.cost_usd, 3.06);
  EXPECT_DOUBLE_EQ(rep.jobs["j1"].cost_usd, 1.53);
  EXPECT_DOUBLE_EQ(rep.jobs["j1"].gpu_hours, 0.5);
  EXPECT_DOUBLE_EQ(rep.teams["ml"].cost_usd, 1.53);
  EXPECT_DOUBLE_EQ(rep.pools["spot"].idle_cost_usd, 1.53);
  EXPECT_DOUBLE_EQ(rep.pools["spot"].idle_gpu_hours, 0.5);
  EXPECT_DOUBLE_EQ(rep.pools["spot"].gpu_hours, 1.0);
  ASSERT_EQ(ledger.records().size(), 2u);
  EXPECT_EQ(ledger.records()[0].cost, ledger.records()[1].cost);
  EXPECT_EQ(ledger.billed(), CostUnits{3'060'000} * 3'600'000'000 * 720'720'000);
}

TEST(CostLedger, EightGpuNodeWithThreeJobs) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("p5", "od", 8, 98.32, kEpoch).is_ok());
  ASSERT_TRUE(ledger
                  .set_shares("p5",
                              {{.job = "a", .team = "t1", .gpu_milli = 1000},
                               {.job = "b", .team = "t1", .gpu_milli = 2000},
                               {.job = "c", .team = "t2", .gpu_milli = 500}},
                              kEpoch)
                  .is_ok());
  ledger.advance(kEpoch + kHour);
  ASSERT_TRUE(ledger.check_balanced().is_ok());
  CostReport rep = ledger.report();
  EXPECT_NEAR(rep.jobs["a"].cost_usd, 12.29, 1e-12);
  EXPECT_NEAR(rep.jobs["b"].cost_usd, 24.58, 1e-12);
  EXPECT_NEAR(rep.jobs["c"].cost_usd, 6.145, 1e-12);
  EXPECT_NEAR(rep.teams["t1"].cost_usd, 36.87, 1e-12);
  EXPECT_NEAR(rep.pools["od"].idle_cost_usd, 55.305, 1e-12);
  EXPECT_NEAR(rep.pools["od"].idle_gpu_hours, 4.5, 1e-12);
  EXPECT_NEAR(rep.total.cost_usd, 98.32, 1e-12);
  // Exact: job c's units are 500/8000 of the node's.
  EXPECT_EQ(ledger.records()[2].cost * 16, ledger.billed());
  // The node is still up: the next advance bills the second hour.
  ledger.advance(kEpoch + 2 * kHour);
  EXPECT_NEAR(ledger.report().total.cost_usd, 2 * 98.32, 1e-12);
}

TEST(CostLedger, ZeroGpuNodeIsAllIdle) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("cpu", "od", 0, 0.918, kEpoch).is_ok());
  ASSERT_TRUE(ledger.node_down("cpu", kEpoch + kHour).is_ok());
  ASSERT_TRUE(ledger.check_balanced().is_ok());
  CostReport rep = ledger.report();
  EXPECT_NEAR(rep.pools["od"].idle_cost_usd, 0.918, 1e-15);
  EXPECT_EQ(rep.total.gpu_hours, 0);
}

TEST(CostLedger, ReportBoundsCountCutIntervalsProRata) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("n", "p", 2, 10.0, kEpoch).is_ok());
  ASSERT_TRUE(
      ledger.set_shares("n", {{.job = "j", .team = "t", .gpu_milli = 2000}}, kEpoch).is_ok());
  ASSERT_TRUE(ledger.node_down("n", kEpoch + 4 * kHour).is_ok());
  CostReport rep = ledger.report(kEpoch + kHour, kEpoch + 2 * kHour + seconds(1800));
  EXPECT_NEAR(rep.jobs["j"].cost_usd, 15.0, 1e-9);
  EXPECT_NEAR(rep.jobs["j"].gpu_hours, 3.0, 1e-9);
  EXPECT_NEAR(rep.total.cost_usd, 15.0, 1e-9);
  EXPECT_TRUE(ledger.report(kEpoch + 5 * kHour).jobs.empty());
}

TEST(CostLedger, LostWorkIsPricedAtTheNodeRate) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("n", "spot", 4, 8.0, kEpoch).is_ok());
  ASSERT_TRUE(
      ledger.set_shares("n", {{.job = "j", .team = "t", .gpu_milli = 2000}}, kEpoch).is_ok());
  ASSERT_TRUE(ledger.node_down("n", kEpoch + kHour).is_ok());
  // Reported after the node went: the ledger still knows its price.
  ASSERT_TRUE(
      ledger.record_lost_work("n", "j", "t", 2000, seconds(1800), kEpoch + kHour, true).is_ok());
  ASSERT_TRUE(ledger.check_balanced().is_ok());
  CostReport rep = ledger.report();
  EXPECT_NEAR(rep.jobs["j"].lost_cost_usd, 2.0, 1e-12);  // half the node for half an hour
  EXPECT_NEAR(rep.jobs["j"].lost_gpu_hours, 1.0, 1e-12);
  EXPECT_EQ(rep.jobs["j"].interruptions, 1);
  EXPECT_EQ(rep.teams["t"].interruptions, 1);
  EXPECT_EQ(rep.total.interruptions, 1);
  EXPECT_NEAR(rep.jobs["j"].cost_usd, 4.0, 1e-12);  // lost cost is inside the job's cost
  EXPECT_EQ(ledger.record_lost_work("x", "j", "t", 1, seconds(1), kEpoch, false).code(),
            util::StatusCode::NotFound);
}

TEST(CostLedger, Errors) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("n", "p", 2, 1.0, kEpoch).is_ok());
  EXPECT_EQ(ledger.node_up("n", "p", 2, 1.0, kEpoch).code(), util::StatusCode::AlreadyExists);
  EXPECT_EQ(ledger.node_up("m", "p", 7 * 11 * 13 * 2 * 17, 1.0, kEpoch).code(),
            util::StatusCode::InvalidArgument);
  EXPECT_EQ(ledger.node_up("m", "p", 1, -1.0, kEpoch).code(), util::StatusCode::InvalidArgument);
  util::Status over = ledger.set_shares(
      "n",
      {{.job = "a", .team = "t", .gpu_milli = 1500}, {.job = "b", .team = "t", .gpu_milli = 600}},
      kEpoch);
  EXPECT_EQ(over.code(), util::StatusCode::InvalidArgument);
  EXPECT_NE(over.message().find("2100"), std::string::npos) << over.message();
  EXPECT_EQ(ledger.node_down("nope", kEpoch).code(), util::StatusCode::NotFound);
  EXPECT_EQ(ledger.set_shares("nope", {}, kEpoch).code(), util::StatusCode::NotFound);
}

TEST(CostLedger, RestoredRecordsStayBalanced) {
  CostLedger ledger;
  ASSERT_TRUE(ledger.node_up("n", "p", 1, 1.0, kEpoch).is_ok());
  ASSERT_TRUE(ledger.node_down("n", kEpoch + kHour).is_ok());
  CostLedger restored;
  restored.restore(ledger.records());
  EXPECT_TRUE(restored.check_balanced().is_ok());
  EXPECT_EQ(restored.billed(), ledger.billed());
  EXPECT_EQ(restored.records_since(0).size(), ledger.records().size());
  EXPECT_TRUE(restored.records_since(5).empty());
  EXPECT_DOUBLE_EQ(cost_units_to_usd(restored.billed()), 1.0);
}

TEST(CostLedger, RandomSchedulesBalanceExactly) {
  const double kPrices[] = {0.918, 31.218, 98.32, 3.06, 1.2345678, 0.0};
  const int kGpus[] = {0, 1, 2, 4, 8, 3, 16};
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    CostLedger ledger;
    std::vector<std::pair<std::string, int>> up;  // node, gpus
    util::Time t = kEpoch;
    int next_node = 0;
    for (int step = 0; step < 300; ++step) {
      t += util::Duration(static_cast<int64_t>(rng() % 7'200'000'000ULL) + 1);
      int what = static_cast<int>(rng() % 10);
      if (up.empty() || what < 2) {
        std::string name = "n" + std::to_string(next_node++);
        int gpus = kGpus[rng() % std::size(kGpus)];
        std::string pool = "pool" + std::to_string(rng() % 3);
        ASSERT_TRUE(
            ledger.node_up(name, pool, gpus, kPrices[rng() % std::size(kPrices)], t).is_ok());
        up.emplace_back(name, gpus);
      } else if (what < 3) {
        size_t i = rng() % up.size();
        ASSERT_TRUE(ledger.node_down(up[i].first, t).is_ok());
        up.erase(up.begin() + static_cast<std::ptrdiff_t>(i));
      } else if (what < 9) {
        auto& [name, gpus] = up[rng() % up.size()];
        std::vector<CostShare> shares;
        int64_t left = int64_t{gpus} * 1000;
        int n = static_cast<int>(rng() % 4);
        for (int k = 0; k < n && left > 0; ++k) {
          int64_t milli = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(left));
          left -= milli;
          shares.push_back({.job = "j" + std::to_string(rng() % 20),
                            .team = "t" + std::to_string(rng() % 4),
                            .gpu_milli = milli});
        }
        ASSERT_TRUE(ledger.set_shares(name, shares, t).is_ok());
      } else {
        ledger.advance(t);
      }
    }
    ledger.advance(t + kHour);
    ASSERT_TRUE(ledger.check_balanced().is_ok()) << "seed " << seed;
    for (const auto& [since, until] : {std::pair{util::Time::min(), util::Time::max()},
                                       std::pair{kEpoch + 10 * kHour, kEpoch + 100 * kHour}}) {
      CostReport rep = ledger.report(since, until);
      double parts = 0;
      for (const auto& [team, totals] : rep.teams) parts += totals.cost_usd;
      double pools = 0;
      for (const auto& [pool, totals] : rep.pools) {
        parts += totals.idle_cost_usd;
        pools += totals.cost_usd;
      }
      double tol = 1e-9 * std::max(1.0, std::abs(rep.total.cost_usd));
      EXPECT_NEAR(rep.total.cost_usd, parts, tol) << "seed " << seed;
      EXPECT_NEAR(rep.total.cost_usd, pools, tol) << "seed " << seed;
    }
    EXPECT_NEAR(ledger.report().total.cost_usd, cost_units_to_usd(ledger.billed()),
                1e-9 * cost_units_to_usd(ledger.billed()));
  }
}

}  // namespace
}  // namespace trainyard::cloud
