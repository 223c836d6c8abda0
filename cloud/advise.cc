#include "cloud/advise.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "model/accelerator.h"

namespace trainyard::cloud {
namespace {

util::Status check_request(const AdviseRequest& r) {
  if (r.gpus_per_worker < 1 || r.gpus_per_worker > 1024) {
    return util::invalid_argument("gpus per worker must be between 1 and 1024 (got " +
                                  std::to_string(r.gpus_per_worker) + ")");
  }
  if (r.workers < 1 || r.workers > 100000) {
    return util::invalid_argument("workers must be between 1 and 100000 (got " +
                                  std::to_string(r.workers) + ")");
  }
  return util::Status::ok();
}

// The canonical names the request allows; empty = all.
util::Result<std::vector<std::string>> allowed_accelerators(const AdviseRequest& r) {
  std::vector<std::string> out;
  for (const auto& name : r.accelerators) {
    auto canonical = catalog_accelerator(name);
    if (!canonical) {
      return util::invalid_argument("unknown accelerator '" + name +
                                    "' (use a name such as H100-80GB, A100-80GB or V100-16GB)");
    }
    out.push_back(*canonical);
  }
  return out;
}

}  // namespace

util::Result<std::vector<RankedOffering>> rank_offerings(const std::vector<Offering>& offerings,
                                                         const ThroughputTable& throughput,
                                                         const AdviseRequest& request) {
  TY_RETURN_IF_ERROR(check_request(request));
  TY_ASSIGN_OR_RETURN(std::vector<std::string> allowed, allowed_accelerators(request));
  // A catalog has a dozen accelerator models and thousands of rows: look each model up once.
  std::map<std::string, RelativeThroughput, std::less<>> rel;
  std::vector<RankedOffering> out;
  for (size_t idx = 0; idx < offerings.size(); ++idx) {
    const Offering& o = offerings[idx];
    const auto& price =
        request.purchase == PurchaseOption::Spot ? o.spot_per_hour : o.on_demand_per_hour;
    if (!price || o.gpus_per_node < request.gpus_per_worker) continue;
    if (!allowed.empty() &&
        std::find(allowed.begin(), allowed.end(), o.accelerator) == allowed.end()) {
      continue;
    }
    auto it = rel.find(o.accelerator);
    if (it == rel.end()) {
      TY_ASSIGN_OR_RETURN(RelativeThroughput r,
                          throughput.relative(request.job_type, o.accelerator));
      it = rel.emplace(o.accelerator, r).first;
    }
    const int workers_per_node = o.gpus_per_node / request.gpus_per_worker;
    const int nodes = (request.workers + workers_per_node - 1) / workers_per_node;
    const double gpus_used = static_cast<double>(request.workers) * request.gpus_per_worker;
    RankedOffering r{.offering = idx,
                     .nodes = nodes,
                     .price_per_hour = *price * nodes,
                     .relative_throughput = it->second.per_gpu,
                     .throughput_estimated = it->second.estimated};
    r.cost_per_work = r.price_per_hour / (r.relative_throughput * gpus_used);
    out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const RankedOffering& a, const RankedOffering& b) {
    return std::tie(a.cost_per_work, a.price_per_hour, a.offering) <
           std::tie(b.cost_per_work, b.price_per_hour, b.offering);
  });
  return out;
}

}  // namespace trainyard::cloud
