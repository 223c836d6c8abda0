#include "store/internal/schema.h"

#include <iterator>
#include <string>

#include <fmt/format.h>

#include "store/internal/sqlite_stmt.h"
#include "store/store.h"

namespace trainyard::store::internal {
namespace {

// Version 1: jobs (one current row each), the append-only event log, attempts and API tokens.
// AUTOINCREMENT keeps ids and event seqs from ever being reused. Times are int64 microseconds
// since the Unix epoch; job states are model::job_state_name().
constexpr const char* kInitialSchema = R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  team TEXT NOT NULL,
  state TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  priority INTEGER NOT NULL,
  manifest_json TEXT NOT NULL,
  submitted_us INTEGER NOT NULL,
  updated_us INTEGER NOT NULL,
  queued_since_us INTEGER NOT NULL,
  started_us INTEGER NOT NULL,
  finished_us INTEGER NOT NULL,
  not_before_us INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  attained_gpu_us INTEGER NOT NULL,
  reason TEXT NOT NULL,
  placement_json TEXT NOT NULL
);
CREATE INDEX jobs_by_team ON jobs(team, id);
CREATE INDEX jobs_by_state ON jobs(state, id);
CREATE INDEX jobs_by_name ON jobs(name, id);

CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  at_us INTEGER NOT NULL,
  type TEXT NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX events_by_job ON events(job_id, seq);
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

CREATE TABLE attempts (
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  attempt INTEGER NOT NULL,
  started_us INTEGER NOT NULL,
  ended_us INTEGER NOT NULL,
  placement_json TEXT NOT NULL,
  processes_json TEXT NOT NULL,
  outcome TEXT NOT NULL,
  exit_code INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt)
);

CREATE TABLE tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  team TEXT NOT NULL,
  admin INTEGER NOT NULL,
  hash_hex TEXT NOT NULL UNIQUE,
  created_us INTEGER NOT NULL,
  revoked INTEGER NOT NULL DEFAULT 0
);
)sql";

// Version 2: GPU telemetry aggregated per device, job and minute (telemetry_minutes). job_id is
// NULL for a device no job held; it has no foreign key because rows outlive nothing else and are
// pruned by age alone. Measurements a device does not report are NULL, not zero.
constexpr const char* kTelemetrySchema = R"sql(
CREATE TABLE telemetry_minutes (
  device_uuid TEXT NOT NULL,
  job_id INTEGER,
  minute_us INTEGER NOT NULL,
  samples INTEGER NOT NULL,
  gpu_util_avg REAL,
  gpu_util_max REAL,
  mem_util_avg REAL,
  sm_active_avg REAL,
  mem_used_avg REAL,
  mem_used_max INTEGER,
  mem_total INTEGER,
  temp_avg REAL,
  temp_max REAL,
  power_avg REAL,
  power_max REAL,
  sm_clock_avg REAL,
  throttle_or INTEGER,
  ecc_uncorrected_max INTEGER,
  xid_last INTEGER
);
CREATE INDEX telemetry_by_job ON telemetry_minutes(job_id, minute_us);
CREATE INDEX telemetry_by_minute ON telemetry_minutes(minute_us);
)sql";

// Version 3: cost records (cloud/cost_ledger.h): one closed interval of a node's bill per
// holder, or a lost-work record. Append-only like events; money is exact decimal text (the
// ledger's units exceed 64 bits). No foreign key: jobs are named by id text and idle has none.
constexpr const char* kCostSchema = R"sql(
CREATE TABLE cost_records (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  start_us INTEGER NOT NULL,
  end_us INTEGER NOT NULL,
  node TEXT NOT NULL,
  pool TEXT NOT NULL,
  job TEXT NOT NULL,
  team TEXT NOT NULL,
  gpu_milli INTEGER NOT NULL,
  cost_units TEXT NOT NULL,
  lost_gpu_us INTEGER NOT NULL,
  lost_cost_units TEXT NOT NULL,
  interruption INTEGER NOT NULL
);
CREATE INDEX cost_records_by_end ON cost_records(end_us);
)sql";

// Version 4: idempotency keys of job submissions (the Idempotency-Key header). A key belongs to
// a scope (a team, or the admins) and names the job its first submission created and the SHA-256
// of that submission's body. The primary key makes a second job for one key impossible: the row
// is inserted in the job's own transaction, so a key never exists without its job or the reverse.
// Rows are pruned by age (created_us), hence the index.
constexpr const char* kIdempotencySchema = R"sql(
CREATE TABLE idempotency_keys (
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  body_sha256 TEXT NOT NULL,
  created_us INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_by_created ON idempotency_keys(created_us);
)sql";

// Version 5: job controls. held: a user holds the pending job back from the scheduler
// (trainyard hold). array_job_id, array_index, array_limit: the job is task array_index of the
// job array array_job_id (the id of its first task), of which at most array_limit run at once
// (0 = no limit); array_index -1 for a job that is no task.
constexpr const char* kJobControlSchema = R"sql(
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN array_job_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN array_index INTEGER NOT NULL DEFAULT -1;
ALTER TABLE jobs ADD COLUMN array_limit INTEGER NOT NULL DEFAULT 0;
CREATE INDEX jobs_by_array ON jobs(array_job_id, id);
)sql";

// Version 6: tensor-core activity in the per-minute GPU telemetry (percent, GPM; NULL where the
// device does not report it), which the doctor reads for jobs older than the raw samples.
constexpr const char* kTensorTelemetrySchema = R"sql(
ALTER TABLE telemetry_minutes ADD COLUMN tensor_active_avg REAL;
)sql";

constexpr Migration kMigrations[] = {
    {1, kInitialSchema},     {2, kTelemetrySchema},  {3, kCostSchema},
    {4, kIdempotencySchema}, {5, kJobControlSchema}, {6, kTensorTelemetrySchema},
};
static_assert(std::size(kMigrations) == kSchemaVersion,
              "add a migration for every schema version, in order");

util::Result<int> read_version(sqlite3* db, std::string_view path) {
  TY_ASSIGN_OR_RETURN(int64_t version,
                      query_int(db, "PRAGMA user_version", fmt::format("reading {}", path)));
  return static_cast<int>(version);
}

// Applies the migrations after `from`; the caller holds the write transaction.
util::Status apply_from(sqlite3* db, std::string_view path, int from) {
  for (const Migration& migration : kMigrations) {
    if (migration.version <= from) continue;
    TY_RETURN_IF_ERROR(
        exec_sql(db, migration.sql,
                 fmt::format("migrating {} to schema version {}", path, migration.version)));
    std::string bump = fmt::format("PRAGMA user_version = {}", migration.version);
    TY_RETURN_IF_ERROR(exec_sql(db, bump.c_str(), fmt::format("migrating {}", path)));
  }
  return util::Status::ok();
}

}  // namespace

std::span<const Migration> migrations() {
  return kMigrations;
}

util::Result<int> check_schema(sqlite3* db, std::string_view path) {
  TY_ASSIGN_OR_RETURN(int version, read_version(db, path));
  if (version > kSchemaVersion) {
    return util::failed_precondition(
        fmt::format("{} has schema version {}, this trainyard understands up to {}; upgrade "
                    "trainyard",
                    path, version, kSchemaVersion));
  }
  if (version == 0) {
    TY_ASSIGN_OR_RETURN(int64_t tables, query_int(db, "SELECT COUNT(*) FROM sqlite_master",
                                                  fmt::format("reading {}", path)));
    if (tables > 0) {
      return util::failed_precondition(
          fmt::format("{} is an SQLite database but not a trainyard state database (it has "
                      "tables and no schema version); choose another path",
                      path));
    }
  }
  return version;
}

util::Result<int> migrate(sqlite3* db, std::string_view path) {
  TY_ASSIGN_OR_RETURN(int version, check_schema(db, path));
  if (version == kSchemaVersion) return version;
  TY_RETURN_IF_ERROR(exec_sql(db, "BEGIN IMMEDIATE", fmt::format("migrating {}", path)));
  // Another process may have migrated between the check and BEGIN: decide again under the lock.
  util::Result<int> locked = check_schema(db, path);
  util::Status status = locked.status();
  if (status.is_ok()) status = apply_from(db, path, *locked);
  if (status.is_ok()) status = exec_sql(db, "COMMIT", fmt::format("migrating {}", path));
  if (!status.is_ok()) {
    if (sqlite3_get_autocommit(db) == 0) (void)exec_sql(db, "ROLLBACK", "rolling back migration");
    return status;
  }
  return kSchemaVersion;
}

}  // namespace trainyard::store::internal
