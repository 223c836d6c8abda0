// The server's jobs in memory: transitions write the record and its event, a requeue starts a
// new attempt, an ended job leaves memory but its state stays known for its dependents, and a
// cancel that reached a job before its submission keeps it out of memory.
#include "server/job_book.h"

#include <gtest/gtest.h>

namespace trainyard::server {
namespace {

using model::JobState;

ActiveJob job(int64_t id, std::string team, JobState state = JobState::Pending) {
  ActiveJob j;
  j.rec.id = util::JobId(id);
  j.rec.team = std::move(team);
  j.rec.state = state;
  j.rec.attempt = 1;
  return j;
}

class JobBookTest : public ::testing::Test {
 protected:
  util::VirtualClock clock_{util::kEpoch + util::seconds(1'800'000'000)};
  JobBook book_{clock_};
};

TEST_F(JobBookTest, TransitionQueuesTheRecordAndItsEvent) {
  ActiveJob* j = book_.admit(job(7, "vision", JobState::Admitted));
  ASSERT_NE(j, nullptr);
  j->rec.placement_json = "[]";
  Tx tx;
  clock_.advance_to(clock_.now() + util::seconds(5));
  book_.transition(*j, JobState::Placed, "placed on node-1", tx);
  book_.transition(*j, JobState::Running, "started", tx);
  ASSERT_EQ(tx.jobs.size(), 2u);
  ASSERT_EQ(tx.events.size(), 2u);
  EXPECT_EQ(tx.jobs.back().state, JobState::Running);
  EXPECT_EQ(tx.jobs.back().updated, clock_.now());
  EXPECT_EQ(tx.events[0].from_state, "admitted");
  EXPECT_EQ(tx.events[0].to_state, "placed");
  EXPECT_EQ(tx.events[1].reason, "started");
  EXPECT_EQ(tx.events[1].attempt, 1);
  EXPECT_EQ(j->rec.placement_json, "[]");  // a running job keeps its placement
}

TEST_F(JobBookTest, RequeueStartsANewAttemptWithoutAPlacement) {
  ActiveJob* j = book_.admit(job(7, "vision", JobState::Preempting));
  j->rec.placement_json = "[{\"node\":1}]";
  Tx tx;
  clock_.advance_to(clock_.now() + util::seconds(60));
  book_.transition(*j, JobState::Pending, "preempted", tx);
  EXPECT_EQ(j->rec.attempt, 2);
  EXPECT_EQ(j->rec.queued_since, clock_.now());
  EXPECT_TRUE(j->rec.placement_json.empty());
  EXPECT_EQ(tx.events.back().attempt, 1);  // the event belongs to the attempt that ended
}

TEST_F(JobBookTest, AdmittedToPendingIsNotANewAttempt) {
  ActiveJob* j = book_.admit(job(7, "vision", JobState::Admitted));
  Tx tx;
  book_.transition(*j, JobState::Pending, "the server restarted before placing it", tx);
  EXPECT_EQ(j->rec.attempt, 1);
}

TEST_F(JobBookTest, AForbiddenTransitionIsAProgrammingError) {
  ActiveJob* j = book_.admit(job(7, "vision", JobState::Succeeded));
  Tx tx;
  EXPECT_DEATH(book_.transition(*j, JobState::Running, "again", tx), "succeeded -> running");
}

TEST_F(JobBookTest, RetiredJobsLeaveMemoryButTheirStateStaysKnown) {
  ActiveJob* j = book_.admit(job(3, "nlp"));
  Tx tx;
  book_.transition(*j, JobState::Cancelled, "cancelled by alice", tx);
  EXPECT_EQ(tx.jobs.back().finished, clock_.now());
  book_.retire(util::JobId(3));
  EXPECT_EQ(book_.find(util::JobId(3)), nullptr);
  EXPECT_TRUE(book_.active().empty());
  EXPECT_EQ(book_.known_state(util::JobId(3)), JobState::Cancelled);
  EXPECT_EQ(book_.known_state(util::JobId(4)), std::nullopt);
  book_.remember_ended(util::JobId(4), JobState::Succeeded);  // read from the store
  EXPECT_EQ(book_.known_state(util::JobId(4)), JobState::Succeeded);
}

TEST_F(JobBookTest, RetireReturnsTheNextJobForLoopsThatEraseAsTheyGo) {
  book_.admit(job(1, "a"));
  book_.admit(job(2, "a"));
  book_.admit(job(3, "a"));
  auto it = book_.retire(book_.active().find(util::JobId(2)));
  ASSERT_NE(it, book_.active().end());
  EXPECT_EQ(it->first, util::JobId(3));
  EXPECT_EQ(book_.active().size(), 2u);
  EXPECT_EQ(book_.known_state(util::JobId(2)), JobState::Pending);
}

TEST_F(JobBookTest, ACancelThatArrivedFirstKeepsTheJobOutOfMemory) {
  book_.cancel_before_admit(util::JobId(9));
  EXPECT_EQ(book_.admit(job(9, "speech")), nullptr);
  EXPECT_EQ(book_.find(util::JobId(9)), nullptr);
  // Only once: a later job with another id joins as usual.
  EXPECT_NE(book_.admit(job(10, "speech")), nullptr);
  EXPECT_EQ(book_.teams(), (std::set<std::string>{"speech"}));  // seen, cancelled or not
}

TEST_F(JobBookTest, TeamsSeenIncludeJobsThatNeverJoined) {
  book_.admit(job(1, "vision"));
  book_.see_team("nlp");
  EXPECT_EQ(book_.teams(), (std::set<std::string>{"nlp", "vision"}));
}

}  // namespace
}  // namespace trainyard::server
