// Resolves a cloud pool (provider, instance type, region, zones) against the catalog: the
// offering to buy in each zone, and the node shape and price the scheduler sees. Shared by the
// simulator and the server, so both buy the same machines at the same prices.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "cloud/catalog.h"
#include "cloud/throughput.h"
#include "model/node.h"
#include "util/status.h"

namespace trainyard::cloud {

struct PoolOfferings {
  std::vector<std::string> zones;  // the pool's zones in preference order
  std::vector<size_t> offering;    // per zone: index into the offerings given
  std::vector<double> price;       // per zone: USD per node-hour for the pool's purchase option
};

// Fills pool.gpu_model, gpus_per_node, cpu, memory and price_per_node_hour (the first zone's)
// from the catalog and returns the offering per zone. Spot pools price at the spot price,
// others at on-demand. Zones: the pool's own list in its order, else every zone of the region
// (or of every region) sold at a price, cheapest first. Errors name the pool and what the
// catalog does sell, so the fix is obvious.
// With `throughputs` (null: rank by price alone), also sets pool.relative_throughput for
// `job_type` (measured or estimated; left at 1 when the table knows neither the job type nor the
// accelerator). Both drivers pass the table they rank by, so they rank pools alike.
util::Result<PoolOfferings> resolve_pool(std::span<const Offering> offerings, model::Pool& pool,
                                         const ThroughputTable* throughputs,
                                         std::string_view job_type = kDefaultJobType);

}  // namespace trainyard::cloud
