// The cost keeping both drivers share: holders go into the ledger only when they change, a node
// left without jobs starts its idle clock, and lost work is priced after the node went down.
#include "drive/cost_book.h"

#include <gtest/gtest.h>

namespace trainyard::drive {
namespace {

util::Time at(int64_t s) {
  return util::kEpoch + util::seconds(s);
}

TEST(CostBook, IdleClockStartsWhenTheLastJobLeaves) {
  CostBook book;
  ASSERT_TRUE(book.node_up("n1", "spot", 8, 8.0, at(0)).is_ok());
  EXPECT_TRUE(book.billed("n1"));
  EXPECT_EQ(book.idle_since("n1"), at(0));  // up and empty
  ASSERT_TRUE(
      book.set_holders("n1", {{.job = "1", .team = "a", .gpu_milli = 4000}}, at(10)).is_ok());
  EXPECT_EQ(book.idle_since("n1"), std::nullopt);
  ASSERT_TRUE(book.set_holders("n1", {}, at(100)).is_ok());
  EXPECT_EQ(book.idle_since("n1"), at(100));
  ASSERT_TRUE(book.set_holders("n1", {}, at(200)).is_ok());
  EXPECT_EQ(book.idle_since("n1"), at(100));  // still idle since the job left
  ASSERT_TRUE(book.node_down("n1", at(300)).is_ok());
  EXPECT_FALSE(book.billed("n1"));
  EXPECT_EQ(book.idle_since("n1"), std::nullopt);
  EXPECT_FALSE(book.set_holders("n1", {}, at(400)).is_ok());  // not billed any more
}

TEST(CostBook, UnchangedHoldersBookNothingAndEveryUnitIsAttributed) {
  CostBook book;
  ASSERT_TRUE(book.node_up("n1", "spot", 2, 3.6, at(0)).is_ok());
  const std::vector<cloud::CostShare> one = {{.job = "1", .team = "a", .gpu_milli = 1000}};
  ASSERT_TRUE(book.set_holders("n1", one, at(0)).is_ok());
  const size_t records = book.ledger().records().size();
  ASSERT_TRUE(book.set_holders("n1", one, at(600)).is_ok());
  EXPECT_EQ(book.ledger().records().size(), records);
  // set_all_holders: a billed node absent from the map has no holders from then on.
  book.set_all_holders({}, at(1800));
  EXPECT_EQ(book.idle_since("n1"), at(1800));
  ASSERT_TRUE(book.node_down("n1", at(3600)).is_ok());
  const cloud::CostReport r = book.ledger().report();
  EXPECT_NEAR(r.total.cost_usd, 3.6, 1e-9);
  EXPECT_NEAR(r.jobs.at("1").cost_usd, 0.5 * 3.6 * 0.5, 1e-9);  // half the node for half an hour
  EXPECT_TRUE(book.ledger().check_balanced().is_ok());
}

TEST(CostBook, LostWorkIsPricedAfterTheNodeWentDown) {
  CostBook book;
  ASSERT_TRUE(book.node_up("n1", "spot", 1, 2.0, at(0)).is_ok());
  ASSERT_TRUE(book.node_down("n1", at(3600)).is_ok());
  ASSERT_TRUE(
      book.record_lost_work("n1", "7", "a", 1000, util::seconds(1800), at(3600), true).is_ok());
  const cloud::CostReport r = book.ledger().report();
  EXPECT_NEAR(r.jobs.at("7").lost_cost_usd, 1.0, 1e-9);
  EXPECT_EQ(r.jobs.at("7").interruptions, 1);
}

}  // namespace
}  // namespace trainyard::drive
