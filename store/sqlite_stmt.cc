#include "store/internal/sqlite_stmt.h"

#include <utility>

#include <fmt/format.h>

namespace trainyard::store::internal {
namespace {

util::StatusCode code_for(int rc) {
  switch (rc) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
      return util::StatusCode::AlreadyExists;
    default:
      break;
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return util::StatusCode::Unavailable;
    case SQLITE_CONSTRAINT:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_MISUSE:
      return util::StatusCode::FailedPrecondition;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG:
      return util::StatusCode::ResourceExhausted;
    case SQLITE_RANGE:
      return util::StatusCode::InvalidArgument;
    default:
      return util::StatusCode::Internal;
  }
}

}  // namespace

util::Status sqlite_status(sqlite3* db, int rc, std::string_view what) {
  // The connection's message is more specific ("UNIQUE constraint failed: tokens.hash_hex") but
  // only describes `rc` when it is the connection's latest error.
  const char* detail =
      db != nullptr && sqlite3_extended_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return {code_for(rc), fmt::format("{}: {} (sqlite error {})", what, detail, rc)};
}

util::Status exec_sql(sqlite3* db, const char* sql, std::string_view what) {
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return util::Status::ok();
  std::string detail = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  int code = sqlite3_extended_errcode(db);
  return {code_for(code == SQLITE_OK ? rc : code),
          fmt::format("{}: {} (sqlite error {})", what, detail, rc)};
}

util::Result<int64_t> query_int(sqlite3* db, const char* sql, std::string_view what) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  int64_t value = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
  util::Status status =
      rc == SQLITE_ROW || rc == SQLITE_DONE ? util::Status::ok() : sqlite_status(db, rc, what);
  sqlite3_finalize(stmt);
  if (!status.is_ok()) return status;
  return value;
}

Query::Query(Query&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      what_(other.what_),
      next_param_(other.next_param_),
      bind_error_(other.bind_error_) {}

Query::~Query() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Query& Query::bind(int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, next_param_++, value);
  if (bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Query& Query::bind(std::string_view value) {
  // SQLITE_TRANSIENT copies: callers may bind temporaries.
  int rc = sqlite3_bind_text64(stmt_, next_param_++, value.data(), value.size(), SQLITE_TRANSIENT,
                               SQLITE_UTF8);
  if (bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Query& Query::bind_null() {
  int rc = sqlite3_bind_null(stmt_, next_param_++);
  if (bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Query& Query::bind_real(double value) {
  int rc = sqlite3_bind_double(stmt_, next_param_++, value);
  if (bind_error_ == SQLITE_OK) bind_error_ = rc;
  return *this;
}

Query& Query::bind_opt(const std::optional<double>& value) {
  return value ? bind_real(*value) : bind_null();
}

Query& Query::bind_opt(const std::optional<int64_t>& value) {
  return value ? bind(*value) : bind_null();
}

util::Status Query::run() {
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, next());
    if (!row) return util::Status::ok();
  }
}

util::Result<bool> Query::next() {
  if (bind_error_ != SQLITE_OK) return sqlite_status(db_, bind_error_, what_);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return sqlite_status(db_, rc, what_);
}

std::string Query::text(int col) const {
  const unsigned char* data = sqlite3_column_text(stmt_, col);
  if (data == nullptr) return {};
  return {reinterpret_cast<const char*>(data),
          static_cast<size_t>(sqlite3_column_bytes(stmt_, col))};
}

util::Result<Query> StatementCache::query(std::string_view sql, std::string_view what) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return sqlite_status(db_, rc, fmt::format("{} (preparing statement)", what));
    }
    it = statements_.emplace(std::string(sql), stmt).first;
  }
  return Query(db_, it->second, what);
}

void StatementCache::clear() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  statements_.clear();
}

}  // namespace trainyard::store::internal
