// The state behind store::Store, shared by the files that implement it (store.cc: opening and
// transactions; store_jobs.cc: jobs; store_events.cc: events, attempts and tokens).
// Thread-compatible, like Store.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "store/internal/sqlite_stmt.h"
#include "store/store.h"
#include "util/clock.h"

namespace trainyard::store {

// Longest page list_jobs() and events() return, whatever the caller asks for.
inline constexpr int kMaxListLimit = 10'000;

namespace internal {

// An open state database and its statement cache.
struct Connection {
  Connection(sqlite3* connection, std::string db_path, bool is_read_only)
      : db(connection), path(std::move(db_path)), read_only(is_read_only) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    statements.clear();  // statements must be finalized before the connection closes
    sqlite3_close_v2(db);
  }

  // A query over the cached statement for `sql`; `what` names the operation in errors.
  util::Result<Query> query(std::string_view sql, std::string_view what) {
    return statements.query(sql, what);
  }
  // Runs a statement that takes no parameters and returns no rows.
  util::Status run(std::string_view sql, std::string_view what) {
    TY_ASSIGN_OR_RETURN(Query q, query(sql, what));
    return q.run();
  }

  sqlite3* db;
  std::string path;
  bool read_only;
  int schema_version = 0;
  bool in_transaction = false;
  StatementCache statements{db};
};

inline int64_t to_us(util::Time t) {
  return t.time_since_epoch().count();
}
inline int64_t to_us(util::Duration d) {
  return d.count();
}
inline util::Time time_from_us(int64_t us) {
  return util::Time(util::Duration(us));
}

}  // namespace internal

// Store's private state; a plain Connection, named so that Store can forward-declare it.
struct Store::Impl : internal::Connection {
  using Connection::Connection;
};

}  // namespace trainyard::store
