// Idempotency keys in the store: stored with their job in one transaction or not at all, unique
// per scope, durable across reopening, pruned by age, and added to older files by migration.
#include <sqlite3.h>

#include <string>

#include <gtest/gtest.h>

#include "store/internal/schema.h"
#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

IdempotencyKeyRecord make_key(util::JobId job, std::string key = "k1",
                              std::string scope = "team:ml", double created_s = 1000) {
  return {.scope = std::move(scope),
          .key = std::move(key),
          .job = job,
          .body_sha256 = std::string(64, 'a'),
          .created = util::from_seconds(created_s)};
}

int64_t job_count(Store& store) {
  auto n = store.count_jobs({});
  EXPECT_TRUE(n.is_ok()) << n.status().to_string();
  return n.is_ok() ? *n : -1;
}

// Inserts a job and its key in one transaction, as the server's submit does.
util::Result<util::JobId> submit(Store& store, const std::string& key,
                                 const std::string& scope = "team:ml") {
  util::JobId id{0};
  util::Status st = store.transaction([&]() -> util::Status {
    TY_ASSIGN_OR_RETURN(id, store.insert_job(make_job("j")));
    return store.insert_idempotency_key(make_key(id, key, scope));
  });
  if (!st.is_ok()) return st;
  return id;
}

TEST(StoreIdempotency, KeyIsStoredWithItsJobAndReadBack) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto id = submit(*store, "k1");
  ASSERT_TRUE(id.is_ok()) << id.status().to_string();
  auto found = store->find_idempotency_key("team:ml", "k1");
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->job, *id);
  EXPECT_EQ((*found)->scope, "team:ml");
  EXPECT_EQ((*found)->key, "k1");
  EXPECT_EQ((*found)->body_sha256, std::string(64, 'a'));
  EXPECT_EQ((*found)->created, util::from_seconds(1000));
  EXPECT_FALSE(store->find_idempotency_key("team:ml", "k2")->has_value());
  EXPECT_FALSE(store->find_idempotency_key("team:other", "k1")->has_value());
}

TEST(StoreIdempotency, DuplicateKeyRollsBackTheSecondJob) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto first = submit(*store, "k1");
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  auto second = submit(*store, "k1");
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), util::StatusCode::AlreadyExists) << second.status().to_string();
  EXPECT_EQ(job_count(*store), 1);  // the second job went with its refused key
  EXPECT_EQ((*store->find_idempotency_key("team:ml", "k1"))->job, *first);
}

TEST(StoreIdempotency, FailedTransactionKeepsNeitherJobNorKey) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  util::Status st = store->transaction([&]() -> util::Status {
    TY_ASSIGN_OR_RETURN(util::JobId id, store->insert_job(make_job("j")));
    TY_RETURN_IF_ERROR(store->insert_idempotency_key(make_key(id)));
    return util::unavailable("the submission failed after both writes");
  });
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(job_count(*store), 0);
  EXPECT_FALSE(store->find_idempotency_key("team:ml", "k1")->has_value());
}

TEST(StoreIdempotency, KeyOfAJobThatDoesNotExistIsRefused) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  util::Status st = store->insert_idempotency_key(make_key(util::JobId(42)));
  EXPECT_EQ(st.code(), util::StatusCode::FailedPrecondition) << st.to_string();
  EXPECT_FALSE(store->find_idempotency_key("team:ml", "k1")->has_value());
}

TEST(StoreIdempotency, ScopesKeepEqualKeysApart) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto a = submit(*store, "same", "team:a");
  auto b = submit(*store, "same", "team:b");
  auto admin = submit(*store, "same", "admin");
  ASSERT_TRUE(a.is_ok() && b.is_ok() && admin.is_ok());
  EXPECT_EQ((*store->find_idempotency_key("team:a", "same"))->job, *a);
  EXPECT_EQ((*store->find_idempotency_key("team:b", "same"))->job, *b);
  EXPECT_EQ((*store->find_idempotency_key("admin", "same"))->job, *admin);
}

TEST(StoreIdempotency, KeysSurviveReopening) {
  TempDir dir;
  util::JobId id{0};
  {
    StorePtr store = open_or_fail(dir.db());
    ASSERT_NE(store, nullptr);
    id = *submit(*store, "k1");
  }
  StorePtr reader = open_or_fail(dir.db(), {.read_only = true});
  ASSERT_NE(reader, nullptr);
  auto found = reader->find_idempotency_key("team:ml", "k1");
  ASSERT_TRUE(found.is_ok() && found->has_value());
  EXPECT_EQ((*found)->job, id);
}

TEST(StoreIdempotency, PruneDeletesOnlyKeysCreatedBeforeTheCutoff) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 5; ++i) {
    auto id = store->insert_job(make_job("j"));
    ASSERT_TRUE(id.is_ok());
    ASSERT_TRUE(
        store->insert_idempotency_key(make_key(*id, "k" + std::to_string(i), "admin", 1000 + i))
            .is_ok());
  }
  auto pruned = store->prune_idempotency_keys(util::from_seconds(1002));
  ASSERT_TRUE(pruned.is_ok()) << pruned.status().to_string();
  EXPECT_EQ(*pruned, 2);
  EXPECT_FALSE(store->find_idempotency_key("admin", "k0")->has_value());
  EXPECT_FALSE(store->find_idempotency_key("admin", "k1")->has_value());
  EXPECT_TRUE(store->find_idempotency_key("admin", "k2")->has_value());  // at the cutoff: kept
  EXPECT_TRUE(store->find_idempotency_key("admin", "k4")->has_value());
  EXPECT_EQ(job_count(*store), 5);  // pruning a key leaves its job alone
  EXPECT_EQ(*store->prune_idempotency_keys(util::from_seconds(1002)), 0);
  // A pruned key can be used again.
  auto id = store->insert_job(make_job("j"));
  ASSERT_TRUE(id.is_ok());
  EXPECT_TRUE(store->insert_idempotency_key(make_key(*id, "k0", "admin", 2000)).is_ok());
}

TEST(StoreIdempotency, ReadOnlyStoreCannotWriteKeys) {
  TempDir dir;
  ASSERT_NE(open_or_fail(dir.db()), nullptr);
  StorePtr reader = open_or_fail(dir.db(), {.read_only = true});
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->insert_idempotency_key(make_key(util::JobId(1))).is_ok());
  EXPECT_FALSE(reader->prune_idempotency_keys(util::from_seconds(1e9)).is_ok());
}

TEST(StoreIdempotency, MigratesAVersionThreeFileAndKeepsItsJobs) {
  TempDir dir;
  // A version-3 file as the previous trainyard left it: migrations 1..3 and one job.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
    for (const auto& m : internal::migrations()) {
      if (m.version > 3) break;
      ASSERT_EQ(sqlite3_exec(db, m.sql, nullptr, nullptr, nullptr), SQLITE_OK) << m.version;
    }
    ASSERT_EQ(sqlite3_exec(db,
                           "INSERT INTO jobs (name, team, state, attempt, priority, manifest_json, "
                           "submitted_us, updated_us, queued_since_us, started_us, finished_us, "
                           "not_before_us, failures, attained_gpu_us, reason, placement_json) "
                           "VALUES ('old', 'ml', 'pending', 1, 0, '{}', 1, 1, 1, 0, 0, 0, 0, 0, "
                           "'submitted', '');"
                           "PRAGMA user_version = 3;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  {
    // A read-only opener refuses the old file rather than guessing.
    auto ro = Store::open(dir.db(), {.read_only = true});
    EXPECT_FALSE(ro.is_ok());
  }
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  auto old = store->find_job_by_name("ml", "old");
  ASSERT_TRUE(old.is_ok() && old->has_value());
  EXPECT_TRUE(store->insert_idempotency_key(make_key((*old)->id)).is_ok());
  EXPECT_TRUE(store->find_idempotency_key("team:ml", "k1")->has_value());
}

}  // namespace
}  // namespace trainyard::store
