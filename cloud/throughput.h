// Per-accelerator training throughput for a job type, relative to a V100-16GB (= 1.0), from
// Gavel's measured matrix (K80, P100, V100). Accelerators Gavel did not measure are estimated
// from the model catalog's datasheet figures; see docs/cloud.md for the formula and its limits.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::cloud {

inline constexpr std::string_view kReferenceAccelerator = "V100-16GB";
inline constexpr std::string_view kDefaultJobType = "ResNet-50 (batch size 64)";

struct RelativeThroughput {
  double per_gpu = 0;      // steps/s of one GPU ÷ steps/s of one V100-16GB
  bool estimated = false;  // true when Gavel has no measurement for this accelerator
};

class ThroughputTable {
 public:
  // Gavel's simulation_throughputs.json: {"v100": {"('<job type>', <gpus>)": {"null": steps/s,
  // ...}}, "p100": ..., "k80": ...}. Only the isolated ("null"), 1-GPU entries are used.
  static util::Result<ThroughputTable> parse_gavel(std::string_view json, const std::string& name);
  static util::Result<ThroughputTable> load_gavel(const std::string& path);
  // A table from explicit steps/s per (job type, canonical accelerator); for tests and scenarios.
  static ThroughputTable from_measurements(
      std::map<std::string, std::map<std::string, double>> steps_per_second);

  std::vector<std::string> job_types() const;
  // NotFound names the known job types; FailedPrecondition when the reference is unmeasured.
  util::Result<RelativeThroughput> relative(std::string_view job_type,
                                            std::string_view accelerator) const;

 private:
  // job type → canonical accelerator → isolated 1-GPU steps/s
  std::map<std::string, std::map<std::string, double>, std::less<>> steps_;
};

}  // namespace trainyard::cloud
