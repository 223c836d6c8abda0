// Store's cost records: the cost ledger's closed intervals and lost-work records, appended by
// the server's reconcile loop in the same transaction as its other writes and read back whole
// when the server restarts (the ledger keeps its history in memory).
#include <string>
#include <vector>

#include "store/internal/sqlite_stmt.h"
#include "store/internal/store_impl.h"
#include "store/store.h"

namespace trainyard::store {
namespace {

using internal::Query;
using internal::time_from_us;
using internal::to_us;

constexpr const char* kInsertCost =
    "INSERT INTO cost_records (start_us, end_us, node, pool, job, team, gpu_milli, cost_units, "
    "lost_gpu_us, lost_cost_units, interruption) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr const char* kSelectCost =
    "SELECT seq, start_us, end_us, node, pool, job, team, gpu_milli, cost_units, lost_gpu_us, "
    "lost_cost_units, interruption FROM cost_records ORDER BY seq";

}  // namespace

util::Status Store::put_cost_records(const std::vector<CostRecordRow>& rows) {
  for (const auto& r : rows) {
    TY_ASSIGN_OR_RETURN(Query q, impl_->query(kInsertCost, "recording cost"));
    q.bind(to_us(r.start)).bind(to_us(r.end)).bind(r.node).bind(r.pool).bind(r.job).bind(r.team);
    q.bind(r.gpu_milli).bind(r.cost_units);
    q.bind(static_cast<int64_t>(r.lost_gpu_time.count())).bind(r.lost_cost_units);
    q.bind(int64_t{r.interruption ? 1 : 0});
    TY_RETURN_IF_ERROR(q.run());
  }
  return util::Status::ok();
}

util::Result<std::vector<CostRecordRow>> Store::cost_records() {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kSelectCost, "reading cost records"));
  std::vector<CostRecordRow> rows;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.next());
    if (!row) return rows;
    CostRecordRow r;
    r.seq = q.int64(0);
    r.start = time_from_us(q.int64(1));
    r.end = time_from_us(q.int64(2));
    r.node = q.text(3);
    r.pool = q.text(4);
    r.job = q.text(5);
    r.team = q.text(6);
    r.gpu_milli = q.int64(7);
    r.cost_units = q.text(8);
    r.lost_gpu_time = util::Duration(q.int64(9));
    r.lost_cost_units = q.text(10);
    r.interruption = q.int64(11) != 0;
    rows.push_back(std::move(r));
  }
}

}  // namespace trainyard::store
