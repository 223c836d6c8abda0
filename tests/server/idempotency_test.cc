// ControlPlane::submit with an idempotency key: a repeat of a submission returns the job the first
// one created instead of a second job, across restarts and under concurrency; a key is bound to
// its spec and its team, and forgotten after 24 hours.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "plane_fixture.h"
#include "server/control_plane.h"

namespace trainyard::server {
namespace {

class IdempotencyTest : public PlaneTest {
 protected:
  util::Result<nlohmann::json> submit(const std::string& yaml, std::string_view key,
                                      const Principal& who) {
    return plane_->submit(yaml, "job.yaml", who, key);
  }
  // Submits and returns the job's id, or -1 (and a test failure) when refused.
  int64_t submit_id(const std::string& yaml, std::string_view key, const Principal& who) {
    auto r = submit(yaml, key, who);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? (*r)["id"].get<int64_t>() : -1;
  }
  size_t job_count() {
    auto r = plane_->list_jobs({}, admin_);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? (*r)["items"].size() : 0;
  }
};

TEST_F(IdempotencyTest, SameKeyTwiceGivesOneJob) {
  auto first = submit(job_yaml("a"), "key-1", admin_);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_FALSE(first->contains("idempotentReplay"));
  auto again = submit(job_yaml("a"), "key-1", admin_);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)["id"], (*first)["id"]);
  EXPECT_EQ((*again)["idempotentReplay"], true);
  // The same job object as the first reply, apart from the flag.
  nlohmann::json without_flag = *again;
  without_flag.erase("idempotentReplay");
  EXPECT_EQ(without_flag, *first);
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(IdempotencyTest, WithoutAKeyEverySubmissionIsANewJob) {
  const int64_t a = submit_id(job_yaml("a"), "", admin_);
  const int64_t b = submit_id(job_yaml("a"), "", admin_);
  EXPECT_NE(a, b);
  EXPECT_EQ(job_count(), 2u);
}

TEST_F(IdempotencyTest, DistinctKeysGiveDistinctJobs) {
  const int64_t a = submit_id(job_yaml("a"), "key-1", admin_);
  const int64_t b = submit_id(job_yaml("a"), "key-2", admin_);
  EXPECT_NE(a, b);
  EXPECT_EQ(job_count(), 2u);
}

TEST_F(IdempotencyTest, SameKeyWithAnotherSpecIsRefused) {
  const int64_t id = submit_id(job_yaml("a"), "key-1", admin_);
  auto other = submit(job_yaml("b"), "key-1", admin_);
  ASSERT_FALSE(other.is_ok());
  EXPECT_EQ(other.status().code(), util::StatusCode::AlreadyExists);
  EXPECT_NE(other.status().message().find("Idempotency-Key 'key-1' was used for another job spec"),
            std::string::npos)
      << other.status().message();
  EXPECT_NE(other.status().message().find("job " + std::to_string(id)), std::string::npos);
  EXPECT_EQ(job_count(), 1u);
  // The key still gives the first job back with the first spec.
  EXPECT_EQ(submit_id(job_yaml("a"), "key-1", admin_), id);
}

TEST_F(IdempotencyTest, QuotedAndBareFormsAreTheSameKey) {
  // RFC 8941 string, as the IETF draft writes the header, and the bare text Stripe's clients send.
  const int64_t id = submit_id(job_yaml("a"), "\"k\\\"1\\\\\"", admin_);
  EXPECT_EQ(submit_id(job_yaml("a"), "k\"1\\", admin_), id);
  EXPECT_EQ(submit_id(job_yaml("a"), "  \"k\\\"1\\\\\"  ", admin_), id);
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(IdempotencyTest, MalformedKeysAreRefusedWithoutAJob) {
  for (const std::string& key :
       {std::string(256, 'k'), std::string("\"\""), std::string("caf\xc3\xa9"), std::string("a\nb"),
        std::string("\"a\"b\""), std::string("\"a\\b\"")}) {
    auto r = submit(job_yaml("a"), key, admin_);
    ASSERT_FALSE(r.is_ok()) << key;
    EXPECT_EQ(r.status().code(), util::StatusCode::InvalidArgument) << key;
    EXPECT_EQ(r.status().message().rfind("Idempotency-Key: ", 0), 0u) << r.status().message();
  }
  EXPECT_EQ(job_count(), 0u);
  EXPECT_TRUE(submit(job_yaml("a"), std::string(255, 'k'), admin_).is_ok());
}

TEST_F(IdempotencyTest, KeysAreScopedToTheTeam) {
  Principal a{.team = "a", .name = "alice"};
  Principal a2{.team = "a", .name = "another-token-of-a"};
  Principal b{.team = "b", .name = "bob"};
  const int64_t ja = submit_id(job_yaml("x"), "shared", a);
  const int64_t jb = submit_id(job_yaml("x"), "shared", b);
  const int64_t jadmin = submit_id(job_yaml("x"), "shared", admin_);
  EXPECT_NE(ja, jb);
  EXPECT_NE(ja, jadmin);
  EXPECT_NE(jb, jadmin);
  // Any token of team a finds team a's key.
  auto again = submit(job_yaml("x"), "shared", a2);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)["id"], ja);
  EXPECT_EQ((*again)["team"], "a");
  EXPECT_EQ(job_count(), 3u);
}

TEST_F(IdempotencyTest, RefusedSubmissionStoresNoKey) {
  auto big = submit(job_yaml("a", 8), "key-1", admin_);  // no node has 8 GPUs
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.status().code(), util::StatusCode::InvalidArgument);
  // Not a "used for another spec" error: the refused request left nothing behind.
  auto fixed = submit(job_yaml("a", 1), "key-1", admin_);
  ASSERT_TRUE(fixed.is_ok()) << fixed.status().to_string();
  EXPECT_FALSE(fixed->contains("idempotentReplay"));
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(IdempotencyTest, ReplayShowsTheJobAsItIsNow) {
  const int64_t id = submit_id(job_yaml("a"), "key-1", admin_);
  ASSERT_TRUE(plane_->cancel(util::JobId(id), admin_).is_ok());
  auto again = submit(job_yaml("a"), "key-1", admin_);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)["id"], id);
  EXPECT_EQ((*again)["state"], "cancelled");
  EXPECT_EQ((*again)["idempotentReplay"], true);
}

TEST_F(IdempotencyTest, KeySurvivesARestart) {
  const int64_t id = submit_id(job_yaml("a"), "key-1", admin_);
  open();
  auto again = submit(job_yaml("a"), "key-1", admin_);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)["id"], id);
  EXPECT_EQ((*again)["idempotentReplay"], true);
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(IdempotencyTest, KeyIsKeptForADayThenForgotten) {
  const int64_t id = submit_id(job_yaml("a"), "key-1", admin_);
  clock_.advance_to(clock_.now() + util::seconds(24 * 3600));
  EXPECT_EQ(submit_id(job_yaml("a"), "key-1", admin_), id);  // exactly 24 hours: still kept
  EXPECT_EQ(job_count(), 1u);
  clock_.advance_to(clock_.now() + util::seconds(1));
  auto later = submit(job_yaml("b"), "key-1", admin_);  // another spec is fine now
  ASSERT_TRUE(later.is_ok()) << later.status().to_string();
  EXPECT_NE((*later)["id"], id);
  EXPECT_FALSE(later->contains("idempotentReplay"));
  EXPECT_EQ(job_count(), 2u);
  // The key now stands for the new job.
  EXPECT_EQ(submit_id(job_yaml("b"), "key-1", admin_), (*later)["id"].get<int64_t>());
}

TEST_F(IdempotencyTest, ConcurrentSubmissionsWithOneKeyCreateOneJob) {
  constexpr int kThreads = 16;
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race-" + std::to_string(round);
    std::vector<util::Result<nlohmann::json>> results(kThreads, util::internal_error("not run"));
    std::vector<std::thread> threads;
    std::atomic<int> ready{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        results[t] = submit(job_yaml("race"), key, admin_);
      });
    }
    for (auto& th : threads) th.join();
    std::set<int64_t> ids;
    int fresh = 0;
    for (const auto& r : results) {
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      ids.insert((*r)["id"].get<int64_t>());
      if (!r->contains("idempotentReplay")) ++fresh;
    }
    EXPECT_EQ(ids.size(), 1u) << "round " << round;
    EXPECT_EQ(fresh, 1) << "round " << round;
  }
  EXPECT_EQ(job_count(), 5u);
}

TEST_F(IdempotencyTest, ConcurrentSubmissionsWithOneKeyAndTwoSpecsCreateOneJob) {
  constexpr int kThreads = 8;
  std::vector<util::Result<nlohmann::json>> results(kThreads, util::internal_error("not run"));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(
        [&, t] { results[t] = submit(job_yaml(t % 2 == 0 ? "even" : "odd"), "race", admin_); });
  }
  for (auto& th : threads) th.join();
  std::set<std::string> names;
  int refused = 0;
  for (const auto& r : results) {
    if (r.is_ok()) {
      names.insert((*r)["name"].get<std::string>());
    } else {
      EXPECT_EQ(r.status().code(), util::StatusCode::AlreadyExists) << r.status().to_string();
      ++refused;
    }
  }
  EXPECT_EQ(names.size(), 1u);       // only the winner's spec is ever answered
  EXPECT_EQ(refused, kThreads / 2);  // every submission of the other spec is refused
  EXPECT_EQ(job_count(), 1u);
}

}  // namespace
}  // namespace trainyard::server
