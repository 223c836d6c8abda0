#include "cloud/advise.h"

#include <filesystem>

#include <gtest/gtest.h>

namespace trainyard::cloud {
namespace {

Offering machine(std::string type, std::string accel, int gpus, double od, double spot = 0) {
  Offering o{.provider = "aws",
             .instance_type = std::move(type),
             .region = "us-east-1",
             .accelerator = std::move(accel),
             .gpus_per_node = gpus,
             .on_demand_per_hour = od};
  if (spot > 0) o.spot_per_hour = spot;
  return o;
}

// Job "train": a fast GPU does 4× the steps of a V100.
ThroughputTable table() {
  return ThroughputTable::from_measurements(
      {{"train", {{"V100-16GB", 10.0}, {"H100-80GB", 40.0}, {"T4", 3.0}}}});
}

TEST(RankOfferings, CheaperPerWorkRanksFirstEvenWhenDearerPerHour) {
  // 1 H100 at $8/h does 4 V100-units (= $2/unit); 1 V100 at $3/h does 1 (= $3/unit).
  std::vector<Offering> offs = {machine("v100", "V100-16GB", 1, 3.0),
                                machine("h100", "H100-80GB", 1, 8.0)};
  auto ranked = rank_offerings(offs, table(), {.job_type = "train"});
  ASSERT_TRUE(ranked.is_ok()) << ranked.status().to_string();
  ASSERT_EQ(ranked->size(), 2u);
  EXPECT_EQ((*ranked)[0].offering, 1u);
  EXPECT_DOUBLE_EQ((*ranked)[0].cost_per_work, 2.0);
  EXPECT_DOUBLE_EQ((*ranked)[1].cost_per_work, 3.0);
  EXPECT_FALSE((*ranked)[0].throughput_estimated);
}

TEST(RankOfferings, ExcludesNodesSmallerThanAWorkerAndPacksWorkersOntoNodes) {
  std::vector<Offering> offs = {machine("v100x1", "V100-16GB", 1, 3.0),
                                machine("v100x8", "V100-16GB", 8, 24.0),
                                machine("v100x4", "V100-16GB", 4, 12.0)};
  // 3 workers × 4 GPUs: the 1-GPU node cannot hold a worker; the 8-GPU node holds two workers
  // (2 nodes, 4 GPUs idle); the 4-GPU node holds one (3 nodes, none idle).
  auto ranked =
      rank_offerings(offs, table(), {.gpus_per_worker = 4, .workers = 3, .job_type = "train"});
  ASSERT_TRUE(ranked.is_ok());
  ASSERT_EQ(ranked->size(), 2u);
  EXPECT_EQ((*ranked)[0].offering, 2u);
  EXPECT_EQ((*ranked)[0].nodes, 3);
  EXPECT_DOUBLE_EQ((*ranked)[0].price_per_hour, 36.0);
  EXPECT_EQ((*ranked)[1].offering, 1u);
  EXPECT_EQ((*ranked)[1].nodes, 2);
  EXPECT_DOUBLE_EQ((*ranked)[1].cost_per_work, 48.0 / 12.0);
}

TEST(RankOfferings, FiltersByAcceleratorAndPurchaseOption) {
  std::vector<Offering> offs = {machine("v100", "V100-16GB", 1, 3.0, 0.9),
                                machine("h100", "H100-80GB", 1, 8.0),
                                machine("t4", "T4", 1, 0.5, 0.2)};
  auto spot =
      rank_offerings(offs, table(), {.purchase = PurchaseOption::Spot, .job_type = "train"});
  ASSERT_TRUE(spot.is_ok());
  ASSERT_EQ(spot->size(), 2u);  // the H100 has no spot price
  EXPECT_DOUBLE_EQ((*spot)[0].price_per_hour, 0.2);
  auto only = rank_offerings(offs, table(), {.accelerators = {"v100"}, .job_type = "train"});
  ASSERT_TRUE(only.is_ok());
  ASSERT_EQ(only->size(), 1u);
  EXPECT_EQ((*only)[0].offering, 0u);
}

TEST(RankOfferings, BadRequestsAreErrors) {
  std::vector<Offering> offs = {machine("v100", "V100-16GB", 1, 3.0)};
  EXPECT_FALSE(rank_offerings(offs, table(), {.gpus_per_worker = 0, .job_type = "train"}).is_ok());
  auto acc = rank_offerings(offs, table(), {.accelerators = {"Z9000"}, .job_type = "train"});
  ASSERT_FALSE(acc.is_ok());
  EXPECT_NE(acc.status().message().find("unknown accelerator 'Z9000'"), std::string::npos);
  auto job = rank_offerings(offs, table(), {.job_type = "nope"});
  ASSERT_FALSE(job.is_ok());
  EXPECT_NE(job.status().message().find("unknown job type 'nope' (known: train)"),
            std::string::npos);
}

TEST(ThroughputTable, EstimatesUnmeasuredAcceleratorsFromDatasheets) {
  auto r = table().relative("train", "A100-80GB");
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->estimated);
  EXPECT_GT(r->per_gpu, 2.0);
  EXPECT_LT(r->per_gpu, 3.0);
  auto v32 = table().relative("train", "V100-32GB");
  ASSERT_TRUE(v32.is_ok());
  EXPECT_DOUBLE_EQ(v32->per_gpu, 1.0);
  EXPECT_FALSE(v32->estimated);
}

TEST(ThroughputTable, ParsesGavelAndRejectsBadInput) {
  auto t = ThroughputTable::parse_gavel(
      R"json({"k80": {"('J', 1)": {"null": 1.0}}, "p100": {"('J', 1)": {"null": 3.0},
          "('J', 2)": {"null": 5.0}}, "v100": {"('J', 1)": {"null": 4.0}}})json",
      "g.json");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_DOUBLE_EQ(t->relative("J", "P100")->per_gpu, 0.75);
  EXPECT_DOUBLE_EQ(t->relative("J", "K80")->per_gpu, 0.25);
  auto bad = ThroughputTable::parse_gavel(R"({"k80": {}, "p100": {}})", "g.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("g.json: missing object \"v100\""), std::string::npos);
  EXPECT_FALSE(ThroughputTable::parse_gavel("{", "g.json").is_ok());
}

TEST(RankOfferings, RanksTheBundledCatalogWithGavelThroughputs) {
  const std::string shared = TY_SHARED_DIR;
  if (!std::filesystem::is_directory(shared + "/catalog") ||
      !std::filesystem::exists(shared + "/traces/gavel/simulation_throughputs.json")) {
    GTEST_SKIP() << "shared data not present";
  }
  auto catalog = load_catalog(shared + "/catalog");
  auto gavel = ThroughputTable::load_gavel(shared + "/traces/gavel/simulation_throughputs.json");
  ASSERT_TRUE(catalog.is_ok() && gavel.is_ok());
  EXPECT_EQ(gavel->job_types().size(), 26u);
  auto ranked = rank_offerings(catalog->offerings, *gavel, {.gpus_per_worker = 8});
  ASSERT_TRUE(ranked.is_ok());
  ASSERT_GT(ranked->size(), 100u);
  for (size_t i = 1; i < ranked->size(); ++i) {
    EXPECT_LE((*ranked)[i - 1].cost_per_work, (*ranked)[i].cost_per_work);
  }
  EXPECT_GE(catalog->offerings[(*ranked)[0].offering].gpus_per_node, 8);
}

}  // namespace
}  // namespace trainyard::cloud
