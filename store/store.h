// Durable state of the control plane in one SQLite file: jobs (current row per job), their
// append-only event log, attempts (with worker pids for re-adoption after a restart) and API
// tokens (hashes only), GPU telemetry per minute, cost records (showback), and the idempotency
// keys of job submissions. WAL journal with
// synchronous=FULL: a committed transaction survives kill -9 and power loss. The schema is
// versioned; open() migrates older files forward.
//
// Thread-compatible: one Store per thread, or callers serialize access. A second Store on the
// same file (e.g. a read-only one for queries) is fine: WAL lets readers run beside the writer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/job_state.h"
#include "util/clock.h"
#include "util/ids.h"
#include "util/status.h"

namespace trainyard::store {

inline constexpr int kSchemaVersion = 6;

struct JobRecord {
  util::JobId id{0};  // assigned by insert_job
  std::string name;
  std::string team;
  model::JobState state = model::JobState::Pending;
  int attempt = 1;
  int priority = 0;
  std::string manifest_json;  // model::job_manifest_to_json() of the submitted spec
  util::Time submitted{};
  util::Time updated{};
  util::Time queued_since{};
  util::Time started{};     // start of the current/last attempt; kEpoch = never
  util::Time finished{};    // kEpoch = not finished
  util::Time not_before{};  // retry backoff: not schedulable before this time
  int failures = 0;         // failed attempts so far (compared with backoffLimit)
  util::Duration attained_gpu_time{0};
  std::string reason;  // reason of the last transition
  // The current attempt's placement, or the last attempt's once the job ended; empty while
  // pending.
  std::string placement_json;
  // Held by a user (trainyard hold): a pending job the scheduler is not offered until released.
  bool held = false;
  // A task of a job array: the array's id (its first task's id) and this task's index; at most
  // array_limit tasks of the array run at once (0 = no limit). array_index < 0: not a task.
  util::JobId array_job_id{0};
  int array_index = -1;
  int array_limit = 0;
};

struct EventRecord {
  int64_t seq = 0;  // assigned by append_event; increases with every event
  util::JobId job{0};
  util::Time at{};
  std::string type;  // "Submitted", "Transition", "Preempting", "Warning", ...
  std::string from_state;
  std::string to_state;
  int attempt = 1;
  std::string reason;
};

struct AttemptRecord {
  util::JobId job{0};
  int attempt = 1;
  util::Time started{};
  util::Time ended{};          // kEpoch while running
  std::string placement_json;  // where it ran
  std::string processes_json;  // [{"rank":0,"pid":123,"start_ticks":456,"run_dir":"..."}]
  std::string outcome;         // "", "succeeded", "failed", "preempted", "cancelled", "lost"
  int exit_code = 0;
};

struct TokenRecord {
  int64_t id = 0;
  std::string name;
  std::string team;  // empty for an admin token
  bool admin = false;
  std::string hash_hex;  // SHA-256 of the secret; the secret itself is never stored
  util::Time created{};
  bool revoked = false;
};

// One device's GPU telemetry over one minute, for one job (or none): what the server keeps for
// `retentionDays` after the raw samples have left its ring buffer. Fields a device did not report
// in that minute are nullopt. Memory in bytes, temperatures in degrees C, power in watts.
struct TelemetryMinute {
  std::string device_uuid;
  std::optional<util::JobId> job;  // nullopt: no job held the device
  util::Time minute{};             // start of the minute
  int64_t samples = 0;
  std::optional<double> gpu_util_avg, gpu_util_max;  // percent
  std::optional<double> mem_util_avg;                // percent
  std::optional<double> sm_active_avg;               // percent
  std::optional<double> tensor_active_avg;           // percent
  std::optional<double> mem_used_avg;
  std::optional<int64_t> mem_used_max, mem_total;
  std::optional<double> temp_avg, temp_max;
  std::optional<double> power_avg, power_max;
  std::optional<double> sm_clock_avg;  // MHz
  std::optional<int64_t> throttle_or;  // OR of the minute's throttle-reason bits
  std::optional<int64_t> ecc_uncorrected_max;
  std::optional<int64_t> xid_last;
};

// One closed interval of one node's cost for one holder (a job, or idle when job is empty), or a
// lost-work record (start == end): the server's cloud::CostRecord as stored. Money is in the
// ledger's exact units (cloud/cost_ledger.h), kept as decimal text because they exceed 64 bits.
struct CostRecordRow {
  int64_t seq = 0;  // assigned by put_cost_records; the ledger's order
  util::Time start{};
  util::Time end{};
  std::string node;
  std::string pool;
  std::string job;   // empty: idle
  std::string team;  // empty for idle
  int64_t gpu_milli = 0;
  std::string cost_units = "0";
  util::Duration lost_gpu_time{0};
  std::string lost_cost_units = "0";
  bool interruption = false;
};

// A submission's idempotency key: the first submission in `scope` with `key` created `job` from
// a body whose SHA-256 is `body_sha256`. The scope keeps teams' keys apart ("team:<name>", or
// "admin" for admin tokens); (scope, key) is unique.
struct IdempotencyKeyRecord {
  std::string scope;
  std::string key;
  util::JobId job{0};
  std::string body_sha256;  // lowercase hex
  util::Time created{};
};

// The order of a job listing: by id (the order of submission), or by name, state or team (ties
// by id, in the same direction). Each is served by an index of the jobs table.
enum class JobSort { Id, Name, State, Team };

// Newest first (id descending) unless `sort`/`ascending` say otherwise. Keyset paging: `before`
// (with `before_key`, the sort key of that job, for a sort other than Id) names the job the page
// continues after, in the listing's order (so, newest first: only ids < before; 0 = from the
// start). `backward`: the `limit` rows just ahead of that job instead, still returned in the
// listing's order (the previous page). `limit` must be >= 1 (InvalidArgument otherwise) and is
// capped at 10,000.
struct JobFilter {
  std::optional<model::JobState> state;
  std::string team;          // empty = all teams
  std::string name;          // empty = any name
  int64_t array_job_id = 0;  // > 0: only the tasks of this job array
  int64_t before = 0;
  int limit = 100;
  std::string node;  // non-empty: jobs whose placement has a worker on this node
  JobSort sort = JobSort::Id;
  bool ascending = false;
  std::string before_key;
  bool backward = false;
};

struct OpenOptions {
  // Opens an existing file, already at kSchemaVersion, without creating or migrating anything.
  bool read_only = false;
};

// Errors: every SQLite failure is a Status naming the operation and SQLite's message:
// Unavailable when another writer holds the file for more than 5 s, AlreadyExists for a
// duplicate token hash, FailedPrecondition for a broken constraint (an event or attempt of a job
// that does not exist), a read-only store asked to write, or a file this build cannot use.
class Store {
 public:
  // Creates the file (and its missing parent directories, mode 0700) unless read_only, and
  // migrates it to kSchemaVersion. Refuses a newer schema, a non-SQLite file and a foreign
  // SQLite database with FailedPrecondition naming the path.
  static util::Result<std::unique_ptr<Store>> open(const std::filesystem::path& path,
                                                   const OpenOptions& options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;

  // Runs `body` in one transaction (BEGIN IMMEDIATE ... COMMIT): all of its writes are durable
  // when this returns OK, none when `body` or the commit fails. Not reentrant.
  util::Status transaction(const std::function<util::Status()>& body);

  // Writes. Outside transaction() each is its own durable transaction.
  util::Result<util::JobId> insert_job(const JobRecord& job);    // ignores job.id
  util::Status update_job(const JobRecord& job);                 // NotFound if absent
  util::Result<int64_t> append_event(const EventRecord& event);  // returns seq
  util::Status put_attempt(const AttemptRecord& attempt);        // insert or replace
  util::Result<int64_t> insert_token(const TokenRecord& token);
  util::Status revoke_token(int64_t id);
  util::Status put_telemetry_minutes(const std::vector<TelemetryMinute>& rows);
  // Appends cost records in order (the server writes each reconcile cycle's new ones).
  util::Status put_cost_records(const std::vector<CostRecordRow>& rows);
  // Deletes telemetry rows of minutes before `before`; returns how many.
  util::Result<int64_t> prune_telemetry(util::Time before);
  // Records a submission's key. Call it in the transaction that inserts record.job, so that
  // neither can be stored without the other. AlreadyExists when (scope, key) is already stored;
  // FailedPrecondition when the job does not exist.
  util::Status insert_idempotency_key(const IdempotencyKeyRecord& record);
  // Deletes keys created before `before`; returns how many.
  util::Result<int64_t> prune_idempotency_keys(util::Time before);

  // Reads.
  util::Result<std::optional<JobRecord>> get_job(util::JobId id);
  util::Result<std::vector<JobRecord>> list_jobs(const JobFilter& filter);
  util::Result<int64_t> count_jobs(const JobFilter& filter);  // ignores before/limit
  util::Result<std::vector<JobRecord>> active_jobs();         // every job not in a terminal state
  // Newest job of `team` (any team when empty) named `name`.
  util::Result<std::optional<JobRecord>> find_job_by_name(const std::string& team,
                                                          const std::string& name);
  // Events of `job` with seq > after_seq, oldest first; `limit` as in JobFilter.
  util::Result<std::vector<EventRecord>> events(util::JobId job, int64_t after_seq = 0,
                                                int limit = 1000);
  util::Result<std::vector<AttemptRecord>> attempts(util::JobId job);
  util::Result<std::optional<AttemptRecord>> attempt(util::JobId job, int attempt);
  util::Result<std::optional<TokenRecord>> find_token(const std::string& hash_hex);  // revoked too
  util::Result<std::vector<TokenRecord>> tokens();
  // A job's telemetry rows, oldest minute first (several devices per minute for a gang; a minute
  // may appear twice for one device when the server restarted within it). At most `limit`
  // (capped at 100,000) of the newest rows.
  util::Result<std::vector<TelemetryMinute>> job_telemetry(util::JobId job, int limit = 100'000);
  // Every cost record, in the order written (the server restores its ledger from them).
  util::Result<std::vector<CostRecordRow>> cost_records();
  // The stored key (scope, key), pruned or never stored: nullopt.
  util::Result<std::optional<IdempotencyKeyRecord>> find_idempotency_key(const std::string& scope,
                                                                         const std::string& key);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};
using StorePtr = std::unique_ptr<Store>;

}  // namespace trainyard::store
