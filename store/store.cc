#include "store/store.h"

#include <sys/stat.h>

#include <cerrno>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "store/internal/schema.h"
#include "store/internal/sqlite_stmt.h"
#include "store/internal/store_impl.h"

namespace trainyard::store {
namespace {

namespace fs = std::filesystem;
constexpr int kBusyTimeoutMs = 5000;

// Creates the missing ancestors of `path` with mode 0700: the database holds token hashes.
util::Status create_parent_dirs(const fs::path& path) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path dir = path.parent_path(); !dir.empty() && !fs::exists(dir, ec);
       dir = dir.parent_path()) {
    missing.push_back(dir);
    if (dir == dir.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      return util::failed_precondition(
          fmt::format("cannot create directory {} for {}: {}", it->string(), path.string(),
                      std::error_code(errno, std::generic_category()).message()));
    }
  }
  return util::Status::ok();
}

// WAL lets readers run beside the writer; synchronous=FULL makes every commit survive power
// loss, not only a crash of the process.
util::Status set_write_pragmas(internal::Connection& impl) {
  std::string what = fmt::format("switching {} to WAL journal mode", impl.path);
  {
    TY_ASSIGN_OR_RETURN(internal::Query q, impl.query("PRAGMA journal_mode=WAL", what));
    TY_ASSIGN_OR_RETURN(bool row, q.next());
    std::string mode = row ? q.text(0) : "";
    if (mode != "wal") {
      return util::failed_precondition(
          fmt::format("{}: the file system refused (journal mode is '{}'); put the state "
                      "database on a local file system",
                      what, mode));
    }
  }
  TY_RETURN_IF_ERROR(internal::exec_sql(impl.db, "PRAGMA synchronous=FULL",
                                        fmt::format("configuring {}", impl.path)));
  return util::Status::ok();
}

util::Status configure(internal::Connection& impl) {
  sqlite3_extended_result_codes(impl.db, 1);
  sqlite3_busy_timeout(impl.db, kBusyTimeoutMs);
  // Check before changing anything, so a newer or foreign file is left exactly as it was.
  TY_ASSIGN_OR_RETURN(int version, internal::check_schema(impl.db, impl.path));
  TY_RETURN_IF_ERROR(internal::exec_sql(impl.db, "PRAGMA foreign_keys=ON",
                                        fmt::format("configuring {}", impl.path)));
  if (impl.read_only) {
    if (version != kSchemaVersion) {
      return util::failed_precondition(
          fmt::format("{} has schema version {} but version {} is needed; open it read-write "
                      "once (start the server) to migrate it",
                      impl.path, version, kSchemaVersion));
    }
    impl.schema_version = version;
    return util::Status::ok();
  }
  TY_RETURN_IF_ERROR(set_write_pragmas(impl));
  TY_ASSIGN_OR_RETURN(impl.schema_version, internal::migrate(impl.db, impl.path));
  return util::Status::ok();
}

}  // namespace

util::Result<StorePtr> Store::open(const fs::path& path, const OpenOptions& options) {
  std::string name = path.string();
  if (!options.read_only) TY_RETURN_IF_ERROR(create_parent_dirs(path));
  // NOMUTEX: the Store is thread-compatible, so SQLite's own per-call locking is not needed.
  int flags =
      SQLITE_OPEN_NOMUTEX |
      (options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
  // The handle is allocated even when opening fails and must be closed either way.
  auto impl = std::make_unique<Impl>(db, name, options.read_only);
  if (rc != SQLITE_OK) {
    return internal::sqlite_status(
        db, rc, fmt::format("opening {}{}", name, options.read_only ? " read-only" : ""));
  }
  TY_RETURN_IF_ERROR(configure(*impl));
  // The constructor is private, so std::make_unique cannot reach it.
  return StorePtr(new Store(std::move(impl)));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;

int Store::schema_version() const {
  return impl_->schema_version;
}

util::Status Store::transaction(const std::function<util::Status()>& body) {
  if (impl_->in_transaction) {
    return util::failed_precondition("Store::transaction() is not reentrant");
  }
  TY_RETURN_IF_ERROR(impl_->run("BEGIN IMMEDIATE", "beginning a transaction"));
  // Rolls back on every way out but a successful COMMIT, an exception from `body` included.
  struct Finish {
    Impl& impl;
    bool committed = false;
    ~Finish() {
      impl.in_transaction = false;
      if (!committed && sqlite3_get_autocommit(impl.db) == 0) {
        (void)impl.run("ROLLBACK", "rolling back a transaction");
      }
    }
  } finish{*impl_};
  impl_->in_transaction = true;
  TY_RETURN_IF_ERROR(body());
  TY_RETURN_IF_ERROR(impl_->run("COMMIT", "committing a transaction"));
  finish.committed = true;
  return util::Status::ok();
}

}  // namespace trainyard::store
