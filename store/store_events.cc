// Store's event log, attempts and API tokens.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "store/internal/sqlite_stmt.h"
#include "store/internal/store_impl.h"
#include "store/store.h"

namespace trainyard::store {
namespace {

using internal::Query;
using internal::time_from_us;
using internal::to_us;

constexpr const char* kInsertEvent =
    "INSERT INTO events (job_id, at_us, type, from_state, to_state, attempt, reason) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)";
constexpr const char* kSelectEvents =
    "SELECT seq, job_id, at_us, type, from_state, to_state, attempt, reason FROM events "
    "WHERE job_id = ? AND seq > ? ORDER BY seq LIMIT ?";

constexpr const char* kUpsertAttempt =
    "INSERT INTO attempts (job_id, attempt, started_us, ended_us, placement_json, "
    "processes_json, outcome, exit_code) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (job_id, attempt) DO UPDATE SET started_us = excluded.started_us, "
    "ended_us = excluded.ended_us, placement_json = excluded.placement_json, "
    "processes_json = excluded.processes_json, outcome = excluded.outcome, "
    "exit_code = excluded.exit_code";
constexpr const char* kAttemptColumns =
    "SELECT job_id, attempt, started_us, ended_us, placement_json, processes_json, outcome, "
    "exit_code FROM attempts ";

constexpr const char* kInsertToken =
    "INSERT INTO tokens (name, team, admin, hash_hex, created_us, revoked) "
    "VALUES (?, ?, ?, ?, ?, ?)";
constexpr const char* kTokenColumns =
    "SELECT id, name, team, admin, hash_hex, created_us, revoked FROM tokens ";

EventRecord read_event(const Query& q) {
  return {.seq = q.int64(0),
          .job = util::JobId(q.int64(1)),
          .at = time_from_us(q.int64(2)),
          .type = q.text(3),
          .from_state = q.text(4),
          .to_state = q.text(5),
          .attempt = q.int32(6),
          .reason = q.text(7)};
}

AttemptRecord read_attempt(const Query& q) {
  return {.job = util::JobId(q.int64(0)),
          .attempt = q.int32(1),
          .started = time_from_us(q.int64(2)),
          .ended = time_from_us(q.int64(3)),
          .placement_json = q.text(4),
          .processes_json = q.text(5),
          .outcome = q.text(6),
          .exit_code = q.int32(7)};
}

TokenRecord read_token(const Query& q) {
  return {.id = q.int64(0),
          .name = q.text(1),
          .team = q.text(2),
          .admin = q.int64(3) != 0,
          .hash_hex = q.text(4),
          .created = time_from_us(q.int64(5)),
          .revoked = q.int64(6) != 0};
}

// Reads every remaining row of `q` with `read`.
template <typename Record>
util::Result<std::vector<Record>> read_all(Query& q, Record (*read)(const Query&)) {
  std::vector<Record> records;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.next());
    if (!row) return records;
    records.push_back(read(q));
  }
}

template <typename Record>
util::Result<std::optional<Record>> read_one(Query& q, Record (*read)(const Query&)) {
  TY_ASSIGN_OR_RETURN(bool row, q.next());
  if (!row) return std::optional<Record>();
  return std::optional<Record>(read(q));
}

}  // namespace

util::Result<int64_t> Store::append_event(const EventRecord& event) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kInsertEvent, "appending an event"));
  q.bind(event.job.value()).bind(to_us(event.at)).bind(event.type).bind(event.from_state);
  q.bind(event.to_state).bind(event.attempt).bind(event.reason);
  TY_RETURN_IF_ERROR(q.run());
  return sqlite3_last_insert_rowid(impl_->db);
}

util::Result<std::vector<EventRecord>> Store::events(util::JobId job, int64_t after_seq,
                                                     int limit) {
  if (limit < 1) {
    return util::invalid_argument(fmt::format("event limit must be at least 1 (got {})", limit));
  }
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kSelectEvents, "reading events"));
  q.bind(job.value()).bind(after_seq).bind(std::min(limit, kMaxListLimit));
  return read_all(q, &read_event);
}

util::Status Store::put_attempt(const AttemptRecord& attempt) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kUpsertAttempt, "recording an attempt"));
  q.bind(attempt.job.value()).bind(attempt.attempt).bind(to_us(attempt.started));
  q.bind(to_us(attempt.ended)).bind(attempt.placement_json).bind(attempt.processes_json);
  q.bind(attempt.outcome).bind(attempt.exit_code);
  return q.run();
}

util::Result<std::vector<AttemptRecord>> Store::attempts(util::JobId job) {
  static const std::string sql =
      fmt::format("{}WHERE job_id = ? ORDER BY attempt", kAttemptColumns);
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "reading attempts"));
  q.bind(job.value());
  return read_all(q, &read_attempt);
}

util::Result<std::optional<AttemptRecord>> Store::attempt(util::JobId job, int attempt) {
  static const std::string sql = fmt::format("{}WHERE job_id = ? AND attempt = ?", kAttemptColumns);
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "reading an attempt"));
  q.bind(job.value()).bind(attempt);
  return read_one(q, &read_attempt);
}

util::Result<int64_t> Store::insert_token(const TokenRecord& token) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kInsertToken, "inserting a token"));
  q.bind(token.name).bind(token.team).bind(token.admin ? 1 : 0).bind(token.hash_hex);
  q.bind(to_us(token.created)).bind(token.revoked ? 1 : 0);
  TY_RETURN_IF_ERROR(q.run());
  return sqlite3_last_insert_rowid(impl_->db);
}

util::Status Store::revoke_token(int64_t id) {
  TY_ASSIGN_OR_RETURN(
      Query q, impl_->query("UPDATE tokens SET revoked = 1 WHERE id = ?", "revoking a token"));
  q.bind(id);
  TY_RETURN_IF_ERROR(q.run());
  if (sqlite3_changes(impl_->db) == 0) {
    return util::not_found(fmt::format("revoking token {}: no such token", id));
  }
  return util::Status::ok();
}

util::Result<std::optional<TokenRecord>> Store::find_token(const std::string& hash_hex) {
  static const std::string sql = fmt::format("{}WHERE hash_hex = ?", kTokenColumns);
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "finding a token"));
  q.bind(hash_hex);
  return read_one(q, &read_token);
}

util::Result<std::vector<TokenRecord>> Store::tokens() {
  static const std::string sql = fmt::format("{}ORDER BY id", kTokenColumns);
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(sql, "listing tokens"));
  return read_all(q, &read_token);
}

}  // namespace trainyard::store
