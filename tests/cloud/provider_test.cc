#include <gtest/gtest.h>

#include "cloud/provider.h"
#include "cloud/simcloud.h"

namespace trainyard::cloud {
namespace {

using util::seconds;

Offering offering(std::string provider, std::string type, std::optional<double> spot) {
  return Offering{.provider = std::move(provider),
                  .instance_type = std::move(type),
                  .region = "us-east-1",
                  .zone = "use1-az1",
                  .accelerator = "H100-80GB",
                  .gpus_per_node = 8,
                  .vcpus = 192,
                  .memory_gib = 2048,
                  .on_demand_per_hour = 98.32,
                  .spot_per_hour = spot};
}

std::vector<Offering> two_offerings() {
  return {offering("aws", "p5.48xlarge", 30.0), offering("gcp", "a3-highgpu-8g", 35.0)};
}

SpotAdvisor advisor_with(int bucket) {
  SpotAdvisor a;
  a.bucket[{"us-east-1", "p5.48xlarge"}] = bucket;
  return a;
}

TEST(SimCloud, NodeIsReadyAfterTheProviderDelay) {
  util::VirtualClock clock;
  auto cloud =
      make_simcloud(two_offerings(), {}, {.provisioning_delay = {{"gcp", seconds(45)}}}, clock);
  auto aws = cloud->request_node({.offering = 0, .pool = "od"});
  auto gcp = cloud->request_node({.offering = 1, .pool = "od"});
  ASSERT_TRUE(aws.is_ok() && gcp.is_ok());
  clock.advance_to(util::kEpoch + seconds(44));
  EXPECT_TRUE(cloud->poll(util::kEpoch).empty());
  clock.advance_to(util::kEpoch + seconds(90));
  auto events = cloud->poll(util::kEpoch);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, ProviderEventKind::NodeReady);
  EXPECT_EQ(events[0].request, *gcp);
  EXPECT_EQ(events[0].time, util::kEpoch + seconds(45));
  EXPECT_EQ(events[1].request, *aws);
  EXPECT_EQ(events[1].time, util::kEpoch + seconds(90));
  // Polling from the last seen time returns nothing new.
  EXPECT_TRUE(cloud->poll(util::kEpoch + seconds(90)).empty());
}

TEST(SimCloud, SpotRequestBeyondCapacityFailsWithCapacityExhausted) {
  util::VirtualClock clock;
  auto cloud = make_simcloud(two_offerings(), {}, {.spot_capacity = {{0, 2}}}, clock);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot}).is_ok());
  }
  auto third = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot, .pool = "s"});
  ASSERT_TRUE(third.is_ok());
  auto events = cloud->poll(util::kEpoch - seconds(1));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ProviderEventKind::RequestFailed);
  EXPECT_EQ(events[0].request, *third);
  EXPECT_EQ(events[0].pool, "s");
  EXPECT_NE(events[0].reason.find("capacity exhausted"), std::string::npos);
  // On-demand is not limited, and releasing a spot node frees its slot.
  EXPECT_TRUE(cloud->request_node({.offering = 0}).is_ok());
  ASSERT_TRUE(cloud->release_node(1).is_ok());
  auto fourth = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  ASSERT_TRUE(fourth.is_ok());
  for (const auto& e : cloud->poll(util::kEpoch - seconds(1))) {
    EXPECT_FALSE(e.request == *fourth && e.kind == ProviderEventKind::RequestFailed);
  }
}

TEST(SimCloud, InterruptionNoticePrecedesNodeGoneByTheProviderLead) {
  util::VirtualClock clock;
  // A very high rate so that every spot node is reclaimed within the simulated day.
  SimCloudOptions opts{.seed = 7, .interruption_rate_scale = 1e4};
  auto cloud = make_simcloud(two_offerings(), advisor_with(4), opts, clock);
  auto aws = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  auto gcp = cloud->request_node({.offering = 1, .purchase = PurchaseOption::Spot});
  ASSERT_TRUE(aws.is_ok() && gcp.is_ok());
  clock.advance_to(util::kEpoch + seconds(86400));
  std::map<RequestId, util::Time> notice, gone;
  for (const auto& e : cloud->poll(util::kEpoch)) {
    if (e.kind == ProviderEventKind::InterruptionNotice) {
      notice[e.request] = e.time;
      EXPECT_GT(e.deadline, e.time);
      gone[e.request] = e.deadline;
    }
    if (e.kind == ProviderEventKind::NodeGone) {
      EXPECT_EQ(e.time, gone.at(e.request));
    }
  }
  ASSERT_EQ(notice.size(), 2u);
  // Either the full lead, or the notice comes at ready when the node dies sooner.
  const auto ready = util::kEpoch + seconds(90);
  EXPECT_TRUE(gone[*aws] - notice[*aws] == seconds(120) || notice[*aws] == ready);
  EXPECT_TRUE(gone[*gcp] - notice[*gcp] == seconds(30) || notice[*gcp] == ready);
}

TEST(SimCloud, SameSeedGivesTheSameEventsAndAnotherSeedDiffers) {
  auto run = [](uint64_t seed) {
    util::VirtualClock clock;
    auto cloud = make_simcloud(two_offerings(), advisor_with(4),
                               {.seed = seed, .interruption_rate_scale = 100}, clock);
    for (int i = 0; i < 10; ++i) {
      EXPECT_TRUE(cloud
                      ->request_node({.offering = static_cast<size_t>(i % 2),
                                      .purchase = PurchaseOption::Spot})
                      .is_ok());
    }
    clock.advance_to(util::kEpoch + seconds(7 * 86400));
    return cloud->poll(util::kEpoch);
  };
  auto a = run(42);
  EXPECT_EQ(a.size(), 30u);  // ready, notice, gone for each of 10 nodes
  EXPECT_EQ(a, run(42));
  EXPECT_NE(a, run(43));
}

TEST(SimCloud, AdvisorBucketSetsTheRateAndUnlistedOfferingsUseTheDefault) {
  SimCloudOptions opts;
  auto offs = two_offerings();
  EXPECT_DOUBLE_EQ(simcloud_interruption_rate(offs[0], advisor_with(4), opts),
                   interruption_rate_per_hour(4));
  EXPECT_DOUBLE_EQ(simcloud_interruption_rate(offs[1], advisor_with(4), opts),
                   interruption_rate_per_hour(1));
  for (int b = 1; b < kSpotAdvisorBuckets; ++b) {
    EXPECT_GT(interruption_rate_per_hour(b), interruption_rate_per_hour(b - 1));
  }
  // ">20%" a month ≈ 4.9e-4 per hour.
  EXPECT_NEAR(interruption_rate_per_hour(4), 4.886e-4, 1e-6);
}

TEST(SimCloud, RejectsBadOfferingAndMissingSpotPrice) {
  util::VirtualClock clock;
  auto offs = two_offerings();
  offs[1].spot_per_hour.reset();
  auto cloud = make_simcloud(offs, {}, {}, clock);
  EXPECT_EQ(cloud->request_node({.offering = 5}).status().code(),
            util::StatusCode::InvalidArgument);
  auto no_spot = cloud->request_node({.offering = 1, .purchase = PurchaseOption::Spot});
  ASSERT_FALSE(no_spot.is_ok());
  EXPECT_NE(no_spot.status().message().find("has no spot price"), std::string::npos);
  EXPECT_EQ(cloud->release_node(99).code(), util::StatusCode::NotFound);
}

TEST(SimCloud, ReleaseCancelsFutureEventsAndReportsGone) {
  util::VirtualClock clock;
  auto cloud = make_simcloud(two_offerings(), {}, {}, clock);
  auto id = cloud->request_node({.offering = 0});
  ASSERT_TRUE(id.is_ok());
  clock.advance_to(util::kEpoch + seconds(10));
  ASSERT_TRUE(cloud->release_node(*id).is_ok());
  ASSERT_TRUE(cloud->release_node(*id).is_ok());  // idempotent
  clock.advance_to(util::kEpoch + seconds(1000));
  auto events = cloud->poll(util::kEpoch);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ProviderEventKind::NodeGone);
  EXPECT_EQ(events[0].time, util::kEpoch + seconds(10));
}

TEST(StaticProvider, RefusesRequestsAndListsItsNodes) {
  auto p = make_static_provider({offering("onprem", "dgx-h100", std::nullopt)});
  EXPECT_EQ(p->offerings().size(), 1u);
  auto r = p->request_node({.offering = 0, .pool = "batch"});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), util::StatusCode::FailedPrecondition);
  EXPECT_NE(r.status().message().find("static provider cannot add nodes (pool 'batch')"),
            std::string::npos);
  EXPECT_TRUE(p->poll(util::kEpoch).empty());
}

}  // namespace
}  // namespace trainyard::cloud
