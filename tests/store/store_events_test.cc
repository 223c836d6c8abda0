#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

TEST(StoreEvents, AppendsInSeqOrderAndPagesAfterASeq) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  util::JobId a = *store->insert_job(make_job("a"));
  util::JobId b = *store->insert_job(make_job("b"));
  int64_t previous = 0;
  for (int i = 0; i < 6; ++i) {
    EventRecord event = make_event(i % 2 ? b : a, "Transition");
    event.from_state = "pending";
    event.to_state = "admitted";
    event.attempt = 2;
    event.reason = "step " + std::to_string(i);
    event.at = util::from_seconds(2000 + i);
    auto seq = store->append_event(event);
    ASSERT_TRUE(seq.is_ok()) << seq.status().to_string();
    EXPECT_GT(*seq, previous);
    previous = *seq;
  }
  auto events = store->events(a);
  ASSERT_TRUE(events.is_ok());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].reason, "step 0");
  EXPECT_EQ((*events)[2].reason, "step 4");
  EXPECT_EQ((*events)[1].job, a);
  EXPECT_EQ((*events)[1].type, "Transition");
  EXPECT_EQ((*events)[1].from_state, "pending");
  EXPECT_EQ((*events)[1].to_state, "admitted");
  EXPECT_EQ((*events)[1].attempt, 2);
  EXPECT_EQ((*events)[1].at, util::from_seconds(2002));

  auto after = store->events(a, (*events)[0].seq, 1);
  ASSERT_TRUE(after.is_ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].reason, "step 2");
  EXPECT_TRUE(store->events(util::JobId(77))->empty());
  EXPECT_EQ(store->events(a, 0, 0).status().code(), util::StatusCode::InvalidArgument);
}

TEST(StoreEvents, RefusesAnEventForAnUnknownJob) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto seq = store->append_event(make_event(util::JobId(5)));
  EXPECT_EQ(seq.status().code(), util::StatusCode::FailedPrecondition);
  EXPECT_NE(seq.status().message().find("appending an event"), std::string::npos);
}

TEST(StoreAttempts, PutInsertsThenReplaces) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  util::JobId job = *store->insert_job(make_job("j"));
  AttemptRecord first{.job = job,
                      .attempt = 1,
                      .started = util::from_seconds(10),
                      .placement_json = R"({"node":"n1"})",
                      .processes_json = R"([{"rank":0,"pid":123}])"};
  ASSERT_TRUE(store->put_attempt(first).is_ok());
  AttemptRecord second = first;
  second.attempt = 2;
  second.started = util::from_seconds(50);
  ASSERT_TRUE(store->put_attempt(second).is_ok());
  first.ended = util::from_seconds(40);
  first.outcome = "preempted";
  first.exit_code = 143;
  ASSERT_TRUE(store->put_attempt(first).is_ok());

  auto all = store->attempts(job);
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].attempt, 1);
  EXPECT_EQ((*all)[0].outcome, "preempted");
  EXPECT_EQ((*all)[0].exit_code, 143);
  EXPECT_EQ((*all)[0].ended, util::from_seconds(40));
  EXPECT_EQ((*all)[0].processes_json, first.processes_json);
  EXPECT_EQ((*all)[1].started, util::from_seconds(50));
  EXPECT_EQ((*all)[1].ended, util::kEpoch);

  auto one = store->attempt(job, 2);
  ASSERT_TRUE(one.is_ok() && one->has_value());
  EXPECT_EQ((*one)->placement_json, R"({"node":"n1"})");
  EXPECT_FALSE(store->attempt(job, 3)->has_value());
}

TEST(StoreTokens, InsertFindRevokeAndUniqueHashes) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto admin = store->insert_token(
      {.name = "ops", .admin = true, .hash_hex = "aa11", .created = util::from_seconds(5)});
  ASSERT_TRUE(admin.is_ok()) << admin.status().to_string();
  auto team = store->insert_token({.name = "ci", .team = "nlp", .hash_hex = "bb22"});
  ASSERT_TRUE(team.is_ok());
  EXPECT_GT(*team, *admin);

  auto duplicate = store->insert_token({.name = "again", .hash_hex = "aa11"});
  EXPECT_EQ(duplicate.status().code(), util::StatusCode::AlreadyExists);

  auto found = store->find_token("aa11");
  ASSERT_TRUE(found.is_ok() && found->has_value());
  EXPECT_EQ((*found)->id, *admin);
  EXPECT_EQ((*found)->name, "ops");
  EXPECT_TRUE((*found)->admin);
  EXPECT_EQ((*found)->created, util::from_seconds(5));
  EXPECT_FALSE((*found)->revoked);
  EXPECT_FALSE(store->find_token("cc33")->has_value());

  ASSERT_TRUE(store->revoke_token(*team).is_ok());
  EXPECT_EQ(store->revoke_token(999).code(), util::StatusCode::NotFound);
  auto all = store->tokens();
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_FALSE((*all)[0].revoked);
  EXPECT_TRUE((*all)[1].revoked);
  EXPECT_EQ((*all)[1].team, "nlp");
  EXPECT_FALSE((*all)[1].admin);
}

}  // namespace
}  // namespace trainyard::store
