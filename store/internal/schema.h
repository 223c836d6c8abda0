// Versioned schema of the state database. Version N is what migrations 1..N build, applied in
// order; PRAGMA user_version records the version a file has. Migrations only add (tables,
// columns, indexes), so an older trainyard refuses a newer file instead of misreading it.
#pragma once

#include <sqlite3.h>

#include <span>
#include <string_view>

#include "util/status.h"

namespace trainyard::store::internal {

struct Migration {
  int version;      // the schema version after this migration
  const char* sql;  // one or more statements, run in the migration's transaction
};

std::span<const Migration> migrations();

// Reads the file's schema version and refuses files this build cannot use: a newer version, or
// an SQLite database with tables but no version (not a trainyard state database). `path` names
// the file in messages.
util::Result<int> check_schema(sqlite3* db, std::string_view path);

// Brings the file to kSchemaVersion in one IMMEDIATE transaction; a concurrent opener that
// migrated first is noticed and nothing is applied twice. Returns the resulting version.
util::Result<int> migrate(sqlite3* db, std::string_view path);

}  // namespace trainyard::store::internal
