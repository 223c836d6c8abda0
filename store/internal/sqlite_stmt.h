// Thin RAII layer over the SQLite C API: prepared statements cached per connection, one-shot
// executions that bind left to right and always reset, and the mapping of SQLite result codes to
// util::Status. Thread-compatible: a cache and its queries belong to one connection and thread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace trainyard::store::internal {

// Status for a failed SQLite call: the code follows the cause (busy -> Unavailable, constraint ->
// FailedPrecondition or AlreadyExists, ...), the message says what was being done and what SQLite
// reported.
util::Status sqlite_status(sqlite3* db, int rc, std::string_view what);

// Runs SQL text whose rows, if any, are not needed (pragmas, BEGIN/COMMIT, DDL scripts).
util::Status exec_sql(sqlite3* db, const char* sql, std::string_view what);

// Runs a one-off query and returns the integer in the first column of its first row.
util::Result<int64_t> query_int(sqlite3* db, const char* sql, std::string_view what);

// One execution of a prepared statement. Parameters bind left to right (?1, ?2, ...). The
// destructor resets the statement and clears its bindings, so an idle statement holds no read
// snapshot or lock. `what` names the operation in error messages and must outlive the query.
class Query {
 public:
  Query(sqlite3* db, sqlite3_stmt* stmt, std::string_view what)
      : db_(db), stmt_(stmt), what_(what) {}
  Query(Query&& other) noexcept;
  Query& operator=(Query&&) = delete;
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  Query& bind(int64_t value);
  Query& bind(std::string_view value);
  Query& bind_null();
  // Named apart from bind(int64_t): an int argument would convert to either.
  Query& bind_real(double value);
  // Binds NULL for nullopt, so optional measurements stay distinguishable from zero.
  Query& bind_opt(const std::optional<double>& value);
  Query& bind_opt(const std::optional<int64_t>& value);

  // Steps to the end; for statements that return no rows (INSERT, UPDATE).
  util::Status run();
  // Steps once: true when a row is ready to read, false when the result is exhausted.
  util::Result<bool> next();

  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  int int32(int col) const { return sqlite3_column_int(stmt_, col); }
  std::string text(int col) const;
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::optional<double> opt_real(int col) const {
    return is_null(col) ? std::nullopt : std::optional<double>(real(col));
  }
  std::optional<int64_t> opt_int64(int col) const {
    return is_null(col) ? std::nullopt : std::optional<int64_t>(int64(col));
  }

 private:
  util::Status bind_result(int rc);

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string_view what_;
  int next_param_ = 1;
  int bind_error_ = SQLITE_OK;  // first failed bind; reported by run()/next()
};

// Prepares each distinct SQL text once and hands out queries over it. Statements are finalized
// by clear() or the destructor, which must run before the connection is closed.
class StatementCache {
 public:
  explicit StatementCache(sqlite3* db) : db_(db) {}
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;
  ~StatementCache() { clear(); }

  util::Result<Query> query(std::string_view sql, std::string_view what);
  void clear();

 private:
  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*, std::less<>> statements_;
};

}  // namespace trainyard::store::internal
