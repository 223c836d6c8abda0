#include <sqlite3.h>

#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

TelemetryMinute minute_row(std::string device, std::optional<util::JobId> job, int64_t minute) {
  TelemetryMinute m;
  m.device_uuid = std::move(device);
  m.job = job;
  m.minute = util::from_seconds(static_cast<double>(minute * 60));
  m.samples = 60;
  return m;
}

TEST(StoreTelemetry, KeepsMeasurementsAndTellsMissingFromZero) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  const util::JobId job = *store->insert_job(make_job("train"));
  TelemetryMinute m = minute_row("GPU-a", job, 100);
  m.gpu_util_avg = 87.5;
  m.gpu_util_max = 99;
  m.mem_used_max = int64_t{70} << 30;
  m.mem_total = int64_t{80} << 30;
  m.throttle_or = 0x28;
  m.power_avg = 0.0;  // a real zero, not a missing value
  m.tensor_active_avg = 41.5;
  ASSERT_TRUE(store->put_telemetry_minutes({m, minute_row("GPU-b", std::nullopt, 100)}).is_ok());

  auto rows = store->job_telemetry(job);
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), 1u);  // the row of no job is not the job's
  const TelemetryMinute& r = (*rows)[0];
  EXPECT_EQ(r.device_uuid, "GPU-a");
  EXPECT_EQ(r.job, job);
  EXPECT_EQ(r.minute, m.minute);
  EXPECT_EQ(r.samples, 60);
  EXPECT_EQ(r.gpu_util_avg, 87.5);
  EXPECT_EQ(r.gpu_util_max, 99.0);
  EXPECT_EQ(r.mem_used_max, int64_t{70} << 30);
  EXPECT_EQ(r.throttle_or, 0x28);
  EXPECT_EQ(r.power_avg, 0.0);
  EXPECT_EQ(r.tensor_active_avg, 41.5);
  EXPECT_FALSE(r.sm_active_avg.has_value());
  EXPECT_FALSE(r.temp_max.has_value());
  EXPECT_FALSE(r.xid_last.has_value());
}

TEST(StoreTelemetry, ReturnsTheNewestRowsOldestFirstAndPrunesByAge) {
  TempDir dir;
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  const util::JobId job = *store->insert_job(make_job("train"));
  std::vector<TelemetryMinute> rows;
  for (int64_t minute = 10; minute < 20; ++minute) rows.push_back(minute_row("GPU-a", job, minute));
  ASSERT_TRUE(store->put_telemetry_minutes(rows).is_ok());

  auto newest = store->job_telemetry(job, 3);
  ASSERT_TRUE(newest.is_ok());
  ASSERT_EQ(newest->size(), 3u);
  EXPECT_EQ((*newest)[0].minute, util::from_seconds(17 * 60));
  EXPECT_EQ((*newest)[2].minute, util::from_seconds(19 * 60));
  EXPECT_FALSE(store->job_telemetry(job, 0).is_ok());

  auto pruned = store->prune_telemetry(util::from_seconds(15 * 60));
  ASSERT_TRUE(pruned.is_ok());
  EXPECT_EQ(*pruned, 5);
  auto left = store->job_telemetry(job);
  ASSERT_TRUE(left.is_ok());
  ASSERT_EQ(left->size(), 5u);
  EXPECT_EQ(left->front().minute, util::from_seconds(15 * 60));
}

TEST(StoreTelemetry, MigratesAVersionOneFileAndKeepsItsJobs) {
  TempDir dir;
  // A version-1 file: the first migration only, as a trainyard without telemetry left it.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir.db().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT);"
                           "PRAGMA user_version = 1;",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  StorePtr store = open_or_fail(dir.db());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), kSchemaVersion);
  ASSERT_TRUE(store->put_telemetry_minutes({minute_row("GPU-a", std::nullopt, 1)}).is_ok());
}

}  // namespace
}  // namespace trainyard::store
