#include "cloud/pool_offerings.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace trainyard::cloud {
namespace {

std::optional<double> price_for(const Offering& o, model::PoolKind kind) {
  return kind == model::PoolKind::Spot ? o.spot_per_hour : o.on_demand_per_hour;
}

// A zone name for an offering: providers without zones in their file buy per region.
std::string zone_of(const Offering& o) {
  return o.zone.empty() ? o.region : o.zone;
}

std::string joined(const std::set<std::string>& names, size_t max = 8) {
  std::string out;
  size_t n = 0;
  for (const auto& s : names) {
    if (n == max) {
      out += fmt::format(", ... ({} more)", names.size() - max);
      break;
    }
    out += (n++ ? ", " : "") + s;
  }
  return out;
}

}  // namespace

util::Result<PoolOfferings> resolve_pool(std::span<const Offering> offerings, model::Pool& pool,
                                         const ThroughputTable* throughputs,
                                         std::string_view job_type) {
  if (pool.provider.empty() || pool.instance_type.empty()) {
    return util::invalid_argument(fmt::format(
        "pool '{}' needs provider: and instanceType: to be bought from the catalog", pool.name));
  }
  std::vector<size_t> match;
  std::set<std::string> regions;
  bool type_known = false;
  for (size_t i = 0; i < offerings.size(); ++i) {
    const Offering& o = offerings[i];
    if (o.provider != pool.provider || o.instance_type != pool.instance_type) continue;
    type_known = true;
    regions.insert(o.region);
    if (!pool.region.empty() && o.region != pool.region) continue;
    if (!price_for(o, pool.kind)) continue;
    match.push_back(i);
  }
  const std::string_view option = pool.kind == model::PoolKind::Spot ? "spot" : "on-demand";
  if (!type_known) {
    return util::not_found(fmt::format(
        "pool '{}': the catalog has no {} instance type '{}' (see trainyard cost advise for "
        "what it sells)",
        pool.name, pool.provider, pool.instance_type));
  }
  if (match.empty()) {
    return util::not_found(
        fmt::format("pool '{}': {} {} is not sold {}{} in the catalog; regions that list it: {}",
                    pool.name, pool.provider, pool.instance_type, option,
                    pool.region.empty() ? "" : " in region " + pool.region, joined(regions)));
  }
  PoolOfferings out;
  if (!pool.zones.empty()) {
    std::set<std::string> known;
    for (size_t i : match) known.insert(zone_of(offerings[i]));
    for (const auto& z : pool.zones) {
      auto it = std::find_if(match.begin(), match.end(),
                             [&](size_t i) { return zone_of(offerings[i]) == z; });
      if (it == match.end()) {
        return util::not_found(
            fmt::format("pool '{}': zone '{}' does not sell {} {} {}; zones that do: {}", pool.name,
                        z, option, pool.provider, pool.instance_type, joined(known)));
      }
      out.zones.push_back(z);
      out.offering.push_back(*it);
    }
  } else {
    std::stable_sort(match.begin(), match.end(), [&](size_t a, size_t b) {
      const double pa = *price_for(offerings[a], pool.kind);
      const double pb = *price_for(offerings[b], pool.kind);
      if (pa != pb) return pa < pb;
      return zone_of(offerings[a]) < zone_of(offerings[b]);
    });
    std::set<std::string> seen;
    for (size_t i : match) {
      if (!seen.insert(zone_of(offerings[i])).second) continue;
      out.zones.push_back(zone_of(offerings[i]));
      out.offering.push_back(i);
    }
  }
  for (size_t i : out.offering) out.price.push_back(*price_for(offerings[i], pool.kind));
  const Offering& first = offerings[out.offering.front()];
  pool.gpu_model = first.accelerator;
  pool.gpus_per_node = first.gpus_per_node;
  pool.cpu = model::CpuMilli(static_cast<int64_t>(first.vcpus * 1000));
  pool.memory = model::Bytes(static_cast<int64_t>(first.memory_gib * (int64_t{1} << 30)));
  pool.price_per_node_hour = out.price.front();
  pool.autoscaled = true;
  if (throughputs != nullptr) {
    if (auto t = throughputs->relative(job_type, pool.gpu_model); t.is_ok() && t->per_gpu > 0)
      pool.relative_throughput = t->per_gpu;
  }
  return out;
}

}  // namespace trainyard::cloud
