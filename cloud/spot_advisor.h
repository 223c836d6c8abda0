// AWS Spot Instance Advisor interruption buckets (aws_spot_advisor_gpu.csv) and the hourly
// interruption rate simcloud derives from each bucket. Mapping and caveats: docs/cloud.md.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "util/status.h"

namespace trainyard::cloud {

// The feed's range index: 0 "<5%", 1 "5-10%", 2 "10-15%", 3 "15-20%", 4 ">20%" of instances
// interrupted in a month.
inline constexpr int kSpotAdvisorBuckets = 5;

// Interruptions per node-hour for a bucket: the bucket's representative monthly fraction p
// (2.5, 7.5, 12.5, 17.5 and 30 %) as a constant rate, -ln(1 - p) / 730 h.
double interruption_rate_per_hour(int bucket);

struct SpotAdvisor {
  std::map<std::pair<std::string, std::string>, int> bucket;  // (region, instance type) → index
  // The bucket for a machine, or -1 when the advisor does not list it.
  int find(const std::string& region, const std::string& instance_type) const;
};

util::Result<SpotAdvisor> parse_spot_advisor(std::string_view text, const std::string& name);
util::Result<SpotAdvisor> load_spot_advisor(const std::string& path);

}  // namespace trainyard::cloud
