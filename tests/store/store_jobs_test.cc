#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

using model::JobState;

std::vector<int64_t> ids_of(const std::vector<JobRecord>& jobs) {
  std::vector<int64_t> ids;
  for (const JobRecord& job : jobs) ids.push_back(job.id.value());
  return ids;
}

TEST(StoreJobs, InsertThenGetRoundTripsEveryField) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  JobRecord job = make_job("train-llm", "research", JobState::Running);
  job.attempt = 3;
  job.priority = -7;
  job.started = util::from_seconds(1234.5);
  job.finished = util::from_seconds(2000);
  job.not_before = util::from_seconds(1500);
  job.failures = 2;
  job.attained_gpu_time = util::seconds(3600);
  job.placement_json = R"({"node":"n1","gpus":[0,1]})";
  auto id = store->insert_job(job);
  ASSERT_TRUE(id.is_ok()) << id.status().to_string();
  auto got = store->get_job(*id);
  ASSERT_TRUE(got.is_ok() && got->has_value());
  const JobRecord& row = **got;
  EXPECT_EQ(row.id, *id);
  EXPECT_EQ(row.name, "train-llm");
  EXPECT_EQ(row.team, "research");
  EXPECT_EQ(row.state, JobState::Running);
  EXPECT_EQ(row.attempt, 3);
  EXPECT_EQ(row.priority, -7);
  EXPECT_EQ(row.manifest_json, job.manifest_json);
  EXPECT_EQ(row.submitted, job.submitted);
  EXPECT_EQ(row.updated, job.updated);
  EXPECT_EQ(row.queued_since, job.queued_since);
  EXPECT_EQ(row.started, job.started);
  EXPECT_EQ(row.finished, job.finished);
  EXPECT_EQ(row.not_before, job.not_before);
  EXPECT_EQ(row.failures, 2);
  EXPECT_EQ(row.attained_gpu_time, util::seconds(3600));
  EXPECT_EQ(row.reason, "submitted");
  EXPECT_EQ(row.placement_json, job.placement_json);

  auto missing = store->get_job(util::JobId(id->value() + 100));
  ASSERT_TRUE(missing.is_ok());
  EXPECT_FALSE(missing->has_value());
}

TEST(StoreJobs, UpdateReplacesTheRowAndRefusesUnknownIds) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  JobRecord job = make_job("a");
  job.id = *store->insert_job(job);
  job.state = JobState::Admitted;
  job.reason = "quota available";
  job.updated = util::from_seconds(1001);
  ASSERT_TRUE(store->update_job(job).is_ok());
  auto got = store->get_job(job.id);
  ASSERT_TRUE(got.is_ok() && got->has_value());
  EXPECT_EQ((*got)->state, JobState::Admitted);
  EXPECT_EQ((*got)->reason, "quota available");
  EXPECT_EQ((*got)->updated, util::from_seconds(1001));

  job.id = util::JobId(999);
  util::Status missing = store->update_job(job);
  EXPECT_EQ(missing.code(), util::StatusCode::NotFound);
  EXPECT_NE(missing.message().find("999"), std::string::npos);
}

TEST(StoreJobs, ListsNewestFirstWithFiltersAndPaging) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  // ids 1..10: teams alternate, every third job is running, names repeat in pairs.
  for (int i = 1; i <= 10; ++i) {
    JobRecord job = make_job("job-" + std::to_string((i + 1) / 2), i % 2 ? "vision" : "nlp",
                             i % 3 == 0 ? JobState::Running : JobState::Pending);
    ASSERT_EQ(store->insert_job(job)->value(), i);
  }
  EXPECT_EQ(ids_of(*store->list_jobs({})), (std::vector<int64_t>{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(ids_of(*store->list_jobs({.team = "nlp"})), (std::vector<int64_t>{10, 8, 6, 4, 2}));
  EXPECT_EQ(ids_of(*store->list_jobs({.state = JobState::Running})),
            (std::vector<int64_t>{9, 6, 3}));
  EXPECT_EQ(ids_of(*store->list_jobs({.state = JobState::Running, .team = "nlp"})),
            (std::vector<int64_t>{6}));
  EXPECT_EQ(ids_of(*store->list_jobs({.name = "job-2"})), (std::vector<int64_t>{4, 3}));

  // Paging: follow the cursor until a short page.
  std::vector<int64_t> seen;
  JobFilter page{.team = "vision", .limit = 2};
  while (true) {
    auto jobs = store->list_jobs(page);
    ASSERT_TRUE(jobs.is_ok());
    for (int64_t id : ids_of(*jobs)) seen.push_back(id);
    if (jobs->size() < 2) break;
    page.before = jobs->back().id.value();
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{9, 7, 5, 3, 1}));

  EXPECT_EQ(*store->count_jobs({}), 10);
  EXPECT_EQ(*store->count_jobs({.team = "vision"}), 5);
  EXPECT_EQ(*store->count_jobs({.state = JobState::Running, .team = "vision"}), 2);
  EXPECT_EQ(*store->count_jobs({.name = "job-5", .before = 1, .limit = 1}), 2);  // no paging
  EXPECT_EQ(*store->count_jobs({.team = "nobody"}), 0);

  EXPECT_EQ(store->list_jobs({.limit = 0}).status().code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(store->list_jobs({.limit = 1'000'000})->size(), 10u);
}

TEST(StoreJobs, ActiveJobsAreTheNonTerminalOnesInIdOrder) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  const JobState states[] = {JobState::Succeeded, JobState::Pending,   JobState::Failed,
                             JobState::Running,   JobState::Cancelled, JobState::Preempting,
                             JobState::Admitted,  JobState::Placed};
  for (JobState s : states) ASSERT_TRUE(store->insert_job(make_job("j", "ml", s)).is_ok());
  auto active = store->active_jobs();
  ASSERT_TRUE(active.is_ok());
  EXPECT_EQ(ids_of(*active), (std::vector<int64_t>{2, 4, 6, 7, 8}));
}

TEST(StoreJobs, FindsTheNewestJobByName) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->insert_job(make_job("bert", "nlp")).is_ok());     // 1
  ASSERT_TRUE(store->insert_job(make_job("bert", "vision")).is_ok());  // 2
  ASSERT_TRUE(store->insert_job(make_job("bert", "nlp")).is_ok());     // 3
  EXPECT_EQ((*store->find_job_by_name("nlp", "bert"))->id.value(), 3);
  EXPECT_EQ((*store->find_job_by_name("vision", "bert"))->id.value(), 2);
  EXPECT_EQ((*store->find_job_by_name("", "bert"))->id.value(), 3);
  EXPECT_FALSE(store->find_job_by_name("nlp", "gpt")->has_value());
}

TEST(StoreTransaction, CommitsAllWritesTogether) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  util::Status status = store->transaction([&]() -> util::Status {
    for (int i = 0; i < 5; ++i) {
      TY_ASSIGN_OR_RETURN(util::JobId id, store->insert_job(make_job("j")));
      TY_RETURN_IF_ERROR(store->append_event(make_event(id)).status());
    }
    return util::Status::ok();
  });
  ASSERT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_EQ(*store->count_jobs({}), 5);
  EXPECT_EQ(store->events(util::JobId(5))->size(), 1u);
}

TEST(StoreTransaction, RollsBackEverythingWhenTheBodyFails) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  util::Status status = store->transaction([&]() -> util::Status {
    TY_ASSIGN_OR_RETURN(util::JobId id, store->insert_job(make_job("j")));
    TY_RETURN_IF_ERROR(store->append_event(make_event(id)).status());
    return util::invalid_argument("caller changed its mind");
  });
  EXPECT_EQ(status.code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(*store->count_jobs({}), 0);

  // A failing statement inside the body: an event for a job that does not exist.
  status = store->transaction([&]() -> util::Status {
    TY_RETURN_IF_ERROR(store->insert_job(make_job("k")).status());
    return store->append_event(make_event(util::JobId(42))).status();
  });
  EXPECT_EQ(status.code(), util::StatusCode::FailedPrecondition);
  EXPECT_NE(status.message().find("FOREIGN KEY"), std::string::npos) << status.message();
  EXPECT_EQ(*store->count_jobs({}), 0);

  // The store is usable afterwards, and nesting is refused without harm.
  status = store->transaction([&]() -> util::Status {
    TY_RETURN_IF_ERROR(store->insert_job(make_job("m")).status());
    util::Status nested = store->transaction([] { return util::Status::ok(); });
    EXPECT_EQ(nested.code(), util::StatusCode::FailedPrecondition);
    return util::Status::ok();
  });
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  EXPECT_EQ(*store->count_jobs({}), 1);
}

TEST(StoreReadOnly, SeesWhatAWriterCommitsAndCannotWrite) {
  TempDir dir;
  StorePtr writer = open_or_fail(dir.db());
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->insert_job(make_job("first")).is_ok());
  StorePtr reader = open_or_fail(dir.db(), {.read_only = true});
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(*reader->count_jobs({}), 1);
  ASSERT_TRUE(writer->insert_job(make_job("second")).is_ok());
  ASSERT_TRUE(
      writer->transaction([&] { return writer->insert_job(make_job("third")).status(); }).is_ok());
  EXPECT_EQ(*reader->count_jobs({}), 3);
  EXPECT_EQ((*reader->list_jobs({}))[0].name, "third");

  util::Status refused = reader->insert_job(make_job("nope")).status();
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("inserting a job"), std::string::npos) << refused.message();
  EXPECT_EQ(*writer->count_jobs({}), 3);
}

TEST(StoreReadOnly, RefusesAMissingFile) {
  TempDir dir;
  auto store = Store::open(dir.path() / "nothing.db", {.read_only = true});
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.status().message().find("nothing.db"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "nothing.db"));
}

}  // namespace
}  // namespace trainyard::store
