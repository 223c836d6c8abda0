#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

// Runs SQL on the file through the C API, outside any Store; returns SQLite's message or "".
std::string raw_exec(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* conn = nullptr;
  std::string error;
  if (sqlite3_open(db.c_str(), &conn) != SQLITE_OK) {
    error = sqlite3_errmsg(conn);
  } else {
    char* message = nullptr;
    if (sqlite3_exec(conn, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      error = message != nullptr ? message : "failed";
    }
    sqlite3_free(message);
  }
  sqlite3_close(conn);
  return error;
}

TEST(StoreSchema, CreatesMigratesAndReopensWithData) {
  TempDir dir;
  util::JobId first;
  {
    StorePtr store = open_or_fail(dir.db());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), kSchemaVersion);
    first = *store->insert_job(make_job("kept"));
    ASSERT_TRUE(store->append_event(make_event(first)).is_ok());
  }
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  auto job = store->get_job(first);
  ASSERT_TRUE(job.is_ok() && job->has_value());
  EXPECT_EQ((*job)->name, "kept");
  EXPECT_EQ(store->events(first)->size(), 1u);
}

TEST(StoreSchema, NeverReusesJobIds) {
  TempDir dir;
  int64_t last = 0;
  {
    StorePtr store = open_or_fail(dir.db());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->insert_job(make_job("a")).is_ok());
    last = store->insert_job(make_job("b"))->value();
  }
  ASSERT_EQ(raw_exec(dir.db(), "DELETE FROM jobs WHERE id = " + std::to_string(last)), "");
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  EXPECT_GT(store->insert_job(make_job("c"))->value(), last);
}

TEST(StoreSchema, RefusesAFileFromANewerTrainyard) {
  TempDir dir;
  ASSERT_NE(open_or_fail(dir.db()), nullptr);
  ASSERT_EQ(raw_exec(dir.db(), "PRAGMA user_version = 99"), "");
  auto store = Store::open(dir.db());
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().code(), util::StatusCode::FailedPrecondition);
  EXPECT_NE(store.status().message().find("has schema version 99, this trainyard understands up "
                                          "to " +
                                          std::to_string(kSchemaVersion) + "; upgrade trainyard"),
            std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find(dir.db().string()), std::string::npos);
  EXPECT_FALSE(Store::open(dir.db(), {.read_only = true}).is_ok());
}

TEST(StoreSchema, RefusesAFileThatIsNotAnSqliteDatabase) {
  TempDir dir;
  {
    std::ofstream out(dir.db());
    for (int i = 0; i < 200; ++i) out << "this is a text file, not a database\n";
  }
  auto store = Store::open(dir.db());
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.status().message().find(dir.db().string()), std::string::npos)
      << store.status().message();
  EXPECT_NE(store.status().message().find("not a database"), std::string::npos);
}

TEST(StoreSchema, RefusesAnotherApplicationsDatabase) {
  TempDir dir;
  ASSERT_EQ(raw_exec(dir.db(), "CREATE TABLE photos (id INTEGER)"), "");
  auto store = Store::open(dir.db());
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.status().message().find("not a trainyard state database"), std::string::npos)
      << store.status().message();
}

TEST(StoreSchema, CreatesMissingParentDirectoriesPrivately) {
  TempDir dir;
  std::filesystem::path db = dir.path() / "a" / "b" / "state.db";
  ASSERT_NE(open_or_fail(db), nullptr);
  for (const auto& sub : {dir.path() / "a", dir.path() / "a" / "b"}) {
    struct stat info {};
    ASSERT_EQ(::stat(sub.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0077, 0u) << sub;
  }
}

TEST(StoreEvents, AreAppendOnlyEvenThroughRawSql) {
  TempDir dir;
  {
    StorePtr store = open_or_fail(dir.db());
    ASSERT_NE(store, nullptr);
    util::JobId id = *store->insert_job(make_job("j"));
    ASSERT_TRUE(store->append_event(make_event(id)).is_ok());
  }
  EXPECT_NE(raw_exec(dir.db(), "UPDATE events SET reason = 'rewritten'").find("append-only"),
            std::string::npos);
  EXPECT_NE(raw_exec(dir.db(), "DELETE FROM events").find("append-only"), std::string::npos);
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  auto events = store->events(util::JobId(1));
  ASSERT_TRUE(events.is_ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].reason, "submitted");
}

}  // namespace
}  // namespace trainyard::store
