// Right-sizing: ranks catalog offerings for a job by what a unit of work costs, not by $/h.
// Cost per work = price of the nodes per hour ÷ (relative throughput per GPU × GPUs used), in
// USD per V100-equivalent GPU-hour. Pure: reads only its arguments.
// Assumes: a worker lives on one node; workers are packed onto as many identical nodes as
// needed, and idle GPUs on the last node are paid for. Tie-break: lower $/h, then catalog order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cloud/catalog.h"
#include "cloud/provider.h"
#include "cloud/throughput.h"
#include "util/status.h"

namespace trainyard::cloud {

struct AdviseRequest {
  int gpus_per_worker = 1;
  int workers = 1;
  std::vector<std::string> accelerators;  // canonical names or aliases; empty = any
  PurchaseOption purchase = PurchaseOption::OnDemand;
  std::string job_type = std::string(kDefaultJobType);  // a Gavel job type
};

struct RankedOffering {
  size_t offering = 0;             // index into the catalog's offerings
  int nodes = 0;                   // identical nodes needed for all workers
  double price_per_hour = 0;       // all nodes, for the requested purchase option
  double relative_throughput = 0;  // per GPU, V100-16GB = 1
  bool throughput_estimated = false;
  double cost_per_work = 0;  // USD per V100-equivalent GPU-hour of work
};

// Offerings that can run the request, cheapest per unit of work first. Offerings without a
// price for the purchase option, or with fewer GPUs per node than a worker needs, are left out.
util::Result<std::vector<RankedOffering>> rank_offerings(const std::vector<Offering>& offerings,
                                                         const ThroughputTable& throughput,
                                                         const AdviseRequest& request);

}  // namespace trainyard::cloud
