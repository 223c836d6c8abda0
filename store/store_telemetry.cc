// Store's GPU telemetry: per-minute rows per device and job, written in one batch per minute by
// the server's telemetry recorder and pruned by age.
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

constexpr int kMaxTelemetryRows = 100'000;

constexpr const char* kInsertMinute =
    "INSERT INTO telemetry_minutes (device_uuid, job_id, minute_us, samples, gpu_util_avg, "
    "gpu_util_max, mem_util_avg, sm_active_avg, mem_used_avg, mem_used_max, mem_total, temp_avg, "
    "temp_max, power_avg, power_max, sm_clock_avg, throttle_or, ecc_uncorrected_max, xid_last, "
    "tensor_active_avg) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
// The newest `limit` rows, returned oldest first.
constexpr const char* kSelectJobMinutes =
    "SELECT * FROM (SELECT device_uuid, job_id, minute_us, samples, gpu_util_avg, gpu_util_max, "
    "mem_util_avg, sm_active_avg, mem_used_avg, mem_used_max, mem_total, temp_avg, temp_max, "
    "power_avg, power_max, sm_clock_avg, throttle_or, ecc_uncorrected_max, xid_last, "
    "tensor_active_avg FROM telemetry_minutes WHERE job_id = ? ORDER BY minute_us DESC, "
    "device_uuid DESC LIMIT ?) "
    "ORDER BY minute_us, device_uuid";

TelemetryMinute read_minute(const Query& q) {
  TelemetryMinute m;
  m.device_uuid = q.text(0);
  if (const auto job = q.opt_int64(1)) m.job = util::JobId(*job);
  m.minute = time_from_us(q.int64(2));
  m.samples = q.int64(3);
  m.gpu_util_avg = q.opt_real(4);
  m.gpu_util_max = q.opt_real(5);
  m.mem_util_avg = q.opt_real(6);
  m.sm_active_avg = q.opt_real(7);
  m.mem_used_avg = q.opt_real(8);
  m.mem_used_max = q.opt_int64(9);
  m.mem_total = q.opt_int64(10);
  m.temp_avg = q.opt_real(11);
  m.temp_max = q.opt_real(12);
  m.power_avg = q.opt_real(13);
  m.power_max = q.opt_real(14);
  m.sm_clock_avg = q.opt_real(15);
  m.throttle_or = q.opt_int64(16);
  m.ecc_uncorrected_max = q.opt_int64(17);
  m.xid_last = q.opt_int64(18);
  m.tensor_active_avg = q.opt_real(19);
  return m;
}

}  // namespace

util::Status Store::put_telemetry_minutes(const std::vector<TelemetryMinute>& rows) {
  for (const auto& m : rows) {
    TY_ASSIGN_OR_RETURN(Query q, impl_->query(kInsertMinute, "recording GPU telemetry"));
    q.bind(m.device_uuid);
    if (m.job) {
      q.bind(m.job->value());
    } else {
      q.bind_null();
    }
    q.bind(to_us(m.minute)).bind(m.samples).bind_opt(m.gpu_util_avg).bind_opt(m.gpu_util_max);
    q.bind_opt(m.mem_util_avg).bind_opt(m.sm_active_avg).bind_opt(m.mem_used_avg);
    q.bind_opt(m.mem_used_max).bind_opt(m.mem_total).bind_opt(m.temp_avg).bind_opt(m.temp_max);
    q.bind_opt(m.power_avg).bind_opt(m.power_max).bind_opt(m.sm_clock_avg);
    q.bind_opt(m.throttle_or).bind_opt(m.ecc_uncorrected_max).bind_opt(m.xid_last);
    q.bind_opt(m.tensor_active_avg);
    TY_RETURN_IF_ERROR(q.run());
  }
  return util::Status::ok();
}

util::Result<int64_t> Store::prune_telemetry(util::Time before) {
  TY_ASSIGN_OR_RETURN(Query q, impl_->query("DELETE FROM telemetry_minutes WHERE minute_us < ?",
                                            "pruning GPU telemetry"));
  q.bind(to_us(before));
  TY_RETURN_IF_ERROR(q.run());
  return static_cast<int64_t>(sqlite3_changes(impl_->db));
}

util::Result<std::vector<TelemetryMinute>> Store::job_telemetry(util::JobId job, int limit) {
  if (limit < 1) {
    return util::invalid_argument(
        fmt::format("telemetry row limit must be at least 1 (got {})", limit));
  }
  TY_ASSIGN_OR_RETURN(Query q, impl_->query(kSelectJobMinutes, "reading GPU telemetry"));
  q.bind(job.value()).bind(std::min(limit, kMaxTelemetryRows));
  std::vector<TelemetryMinute> rows;
  while (true) {
    TY_ASSIGN_OR_RETURN(bool row, q.next());
    if (!row) return rows;
    rows.push_back(read_minute(q));
  }
}

}  // namespace trainyard::store
