// Store's idempotency keys of job submissions: inserted in the transaction that inserts the job,
// looked up when a submission with a key arrives, and pruned by age.
#include <string>

#include "store/internal/sqlite_stmt.h"
#include "store/internal/store_impl.h"
#include "store/store.h"

namespace trainyard::store {
namespace {

using internal::Query;
using internal::time_from_us;
using internal::to_us;

constexpr const char* kInsertKey =
    "INSERT INTO idempotency_keys (scope, key, job_id, body_sha256, created_us) "
    "VALUES (?, ?, ?, ?, ?)";
constexpr const char* kSelectKey =
    "SELECT scope, key, job_id, body_sha256, created_us FROM idempotency_keys "
    "WHERE scope = ? AND key = ?";

}  // namespace

util::Status Store::insert_idempotency_key(const IdempotencyKeyRecord& record) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kInsertKey, "recording an idempotency key"));
  q.bind(record.scope).bind(record.key).bind(record.job.value()).bind(record.body_sha256);
  q.bind(to_us(record.created));
  return q.run();
}

util::Result<int64_t> Store::prune_idempotency_keys(util::Time before) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query("DELETE FROM idempotency_keys WHERE created_us < ?",
                                            "pruning idempotency keys"));
  q.bind(to_us(before));
  TY_RETURN_IF_ERROR(q.run());
  return static_cast<int64_t>(sqlite3_changes(impl_->db));
}

util::Result<std::optional<IdempotencyKeyRecord>> Store::find_idempotency_key(
    const std::string& scope, const std::string& key) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kSelectKey, "reading an idempotency key"));
  q.bind(scope).bind(key);
  TY_ASSIGN_OR_RETURN(bool row, q.next());
  if (!row) return std::optional<IdempotencyKeyRecord>();
  return std::optional<IdempotencyKeyRecord>(
      IdempotencyKeyRecord{.scope = q.text(0),
                           .key = q.text(1),
                           .job = util::JobId(q.int64(2)),
                           .body_sha256 = q.text(3),
                           .created = time_from_us(q.int64(4))});
}

}  // namespace trainyard::store
