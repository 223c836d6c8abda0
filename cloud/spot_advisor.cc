#include "cloud/spot_advisor.h"

#include <array>
#include <cmath>

#include "util/csv_table.h"

namespace trainyard::cloud {
namespace {

constexpr double kHoursPerMonth = 730.0;
// Midpoints of the closed buckets; ">20%" has no upper bound in practice (the feed says 100),
// so 30 % stands for it: about the median of what the traces show for the worst zones.
constexpr std::array<double, kSpotAdvisorBuckets> kMonthlyFraction = {0.025, 0.075, 0.125, 0.175,
                                                                      0.30};

util::Status add_rows(const util::CsvTable& t, SpotAdvisor& out) {
  TY_ASSIGN_OR_RETURN(int c_region, t.require_column("Region"));
  TY_ASSIGN_OR_RETURN(int c_type, t.require_column("InstanceType"));
  TY_ASSIGN_OR_RETURN(int c_index, t.require_column("InterruptionIndex"));
  for (size_t row = 0; row < t.row_count(); ++row) {
    const std::string_view idx = t.field(row, c_index);
    if (idx.size() != 1 || idx[0] < '0' || idx[0] >= '0' + kSpotAdvisorBuckets) {
      return t.bad_value(row, c_index, "a bucket index 0-4",
                         "use the feed's range index: 0 <5%, 1 5-10%, 2 10-15%, 3 15-20%, 4 >20%");
    }
    if (t.field(row, c_region).empty()) return t.bad_value(row, c_region, "non-empty", "fill in");
    if (t.field(row, c_type).empty()) return t.bad_value(row, c_type, "non-empty", "fill in");
    out.bucket[{std::string(t.field(row, c_region)), std::string(t.field(row, c_type))}] =
        idx[0] - '0';
  }
  return util::Status::ok();
}

}  // namespace

double interruption_rate_per_hour(int bucket) {
  if (bucket < 0 || bucket >= kSpotAdvisorBuckets) return 0.0;
  return -std::log1p(-kMonthlyFraction[static_cast<size_t>(bucket)]) / kHoursPerMonth;
}

int SpotAdvisor::find(const std::string& region, const std::string& instance_type) const {
  auto it = bucket.find({region, instance_type});
  return it == bucket.end() ? -1 : it->second;
}

util::Result<SpotAdvisor> parse_spot_advisor(std::string_view text, const std::string& name) {
  TY_ASSIGN_OR_RETURN(util::CsvTable t, util::CsvTable::parse(text, name, util::kLenientCsv));
  SpotAdvisor out;
  TY_RETURN_IF_ERROR(add_rows(t, out));
  return out;
}

util::Result<SpotAdvisor> load_spot_advisor(const std::string& path) {
  TY_ASSIGN_OR_RETURN(util::CsvTable t, util::CsvTable::read_file(path, util::kLenientCsv));
  SpotAdvisor out;
  TY_RETURN_IF_ERROR(add_rows(t, out));
  return out;
}

}  // namespace trainyard::cloud
