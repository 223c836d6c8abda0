// The minutes not stored yet (the one in progress, or any the recorder has not written) of a
// job's raw samples, summarized like the stored ones, so that `trainyard show` and
// `trainyard telemetry` also have something to draw for a job younger than a minute. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"
#include "telemetry/gpu_sample.h"

namespace trainyard::server {

// One device's samples over one minute, summarized as a stored row: means and maxima, the last
// memory total, throttle reasons OR-ed, the largest uncorrected ECC count and the last XID.
// Used by the recorder for the minutes it stores and by summarize_minutes() for the open ones.
class MinuteSummary {
 public:
  void add(const telemetry::GpuSample& s);
  // The row of `device_uuid` for the minute that starts at `minute` (no job set).
  store::TelemetryMinute row(const std::string& device_uuid, util::Time minute) const;

 private:
  struct Average {
    double sum = 0;
    int64_t n = 0;
    std::optional<double> max;
    void add(std::optional<double> v);
    std::optional<double> mean() const;
  };
  int64_t samples_ = 0;
  Average util_, mem_util_, sm_active_, tensor_active_, mem_used_, temp_, power_, sm_clock_;
  std::optional<int64_t> mem_total_, throttle_or_, ecc_uncorrected_max_, xid_last_;
};

// One row per device and minute of `samples` (any order), ordered by minute, then device.
std::vector<store::TelemetryMinute> summarize_minutes(
    const std::vector<telemetry::GpuSample>& samples);

}  // namespace trainyard::server
