// GCP's catalog prices a machine's host VM and its GPUs on separate rows; this joins them.
// Host rows name an instance type and no GPU; GPU rows have an empty InstanceType and give the
// price of N GPUs in a zone. A machine's price = host row + GPU row of the same zone.
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "cloud/catalog.h"
#include "cloud/catalog_fields.h"
#include "util/csv_table.h"

namespace trainyard::cloud {
namespace {

using internal::read_amount;
using internal::read_gpu_count;
using internal::read_price;
using internal::read_text;

struct Priced {
  std::optional<double> on_demand, spot;
  double vcpus = 0, memory_gib = 0;
};
// (zone, name, count) for GPU rows; (zone, instance type, 0) for hosts.
using Key = std::tuple<std::string, std::string, int>;

// The GPUs built into an accelerator-optimised machine type ("a3-highgpu-8g" → H100 × 8), as
// GCP documents the families. n1 hosts take attachable GPUs and are handled separately.
std::optional<std::pair<std::string, int>> built_in_gpus(std::string_view type) {
  static const std::pair<std::string_view, std::string_view> kFamilies[] = {
      {"a2-highgpu-", "A100"},  {"a2-megagpu-", "A100"}, {"a2-ultragpu-", "A100-80GB"},
      {"a3-highgpu-", "H100"},  {"a3-edgegpu-", "H100"}, {"a3-megagpu-", "H100-MEGA"},
      {"a3-ultragpu-", "H200"}, {"a4-highgpu-", "B200"},
  };
  for (const auto& [prefix, gpu] : kFamilies) {
    if (!type.starts_with(prefix)) continue;
    const int count = std::atoi(std::string(type.substr(prefix.size())).c_str());  // "8g..."
    if (count <= 0) return std::nullopt;
    return std::pair{std::string(gpu), count};
  }
  // g2-standard-K: L4s by vCPU count, per the G2 machine table.
  static const std::pair<std::string_view, int> kG2[] = {
      {"g2-standard-4", 1},  {"g2-standard-8", 1},  {"g2-standard-12", 1}, {"g2-standard-16", 1},
      {"g2-standard-24", 2}, {"g2-standard-32", 1}, {"g2-standard-48", 4}, {"g2-standard-96", 8},
  };
  for (const auto& [name, count] : kG2) {
    if (type == name) return std::pair{std::string("L4"), count};
  }
  return std::nullopt;
}

// GPUs attached to n1 hosts are paired with n1-standard-(8 × count): 8 vCPUs per GPU, a
// common sizing (the catalog does not say which host a user would choose).
bool is_n1_attachable(std::string_view gpu) {
  return gpu == "T4" || gpu == "V100" || gpu == "P100" || gpu == "P4";
}

Offering make_offering(const std::string& type, const std::string& region, const std::string& zone,
                       const std::string& accel, int count, const Priced& host,
                       const Priced& gpus) {
  Offering o{.provider = "gcp",
             .instance_type = type,
             .region = region,
             .zone = zone,
             .accelerator = accel,
             .gpus_per_node = count,
             .vcpus = host.vcpus,
             .memory_gib = host.memory_gib};
  if (host.on_demand && gpus.on_demand) o.on_demand_per_hour = *host.on_demand + *gpus.on_demand;
  if (host.spot && gpus.spot) o.spot_per_hour = *host.spot + *gpus.spot;
  return o;
}

}  // namespace

util::Status parse_gcp_catalog(const util::CsvTable& t, Catalog& out) {
  TY_ASSIGN_OR_RETURN(int c_type, t.require_column("InstanceType"));
  TY_ASSIGN_OR_RETURN(int c_gpu, t.require_column("AcceleratorName"));
  TY_ASSIGN_OR_RETURN(int c_count, t.require_column("AcceleratorCount"));
  TY_ASSIGN_OR_RETURN(int c_vcpus, t.require_column("vCPUs"));
  TY_ASSIGN_OR_RETURN(int c_mem, t.require_column("MemoryGiB"));
  TY_ASSIGN_OR_RETURN(int c_price, t.require_column("Price"));
  TY_ASSIGN_OR_RETURN(int c_region, t.require_column("Region"));
  TY_ASSIGN_OR_RETURN(int c_zone, t.require_column("AvailabilityZone"));
  const int c_spot = t.find_column("SpotPrice");

  // Pass 1: index hosts and GPU rows by zone; std::map keeps the output order stable.
  std::map<Key, Priced> hosts, gpus;
  std::map<std::string, std::string> region_of_zone;
  for (size_t row = 0; row < t.row_count(); ++row) {
    Priced p;
    TY_ASSIGN_OR_RETURN(p.on_demand, read_price(t, row, c_price));
    TY_ASSIGN_OR_RETURN(p.spot, read_price(t, row, c_spot));
    TY_ASSIGN_OR_RETURN(std::string region, read_text(t, row, c_region));
    TY_ASSIGN_OR_RETURN(std::string zone, read_text(t, row, c_zone));
    region_of_zone[zone] = region;
    const std::string type(t.field(row, c_type));
    if (!type.empty()) {
      TY_ASSIGN_OR_RETURN(p.vcpus, read_amount(t, row, c_vcpus, false));
      TY_ASSIGN_OR_RETURN(p.memory_gib, read_amount(t, row, c_mem, false));
      hosts[{zone, type, 0}] = p;
      continue;
    }
    TY_ASSIGN_OR_RETURN(std::string gpu, read_text(t, row, c_gpu));
    TY_ASSIGN_OR_RETURN(double raw_count, read_gpu_count(t, row, c_count));
    const auto whole = internal::whole_gpus(raw_count);
    if (!whole) {
      ++out.skipped_fractional_gpu[gpu];
      continue;
    }
    const int count = *whole;
    if (!catalog_accelerator(gpu)) {
      ++out.skipped_unknown_gpu[gpu];
      continue;
    }
    gpus[{zone, gpu, count}] = p;
  }
  // Pass 2a: accelerator-optimised hosts with their built-in GPUs.
  for (const auto& [key, host] : hosts) {
    const auto& [zone, type, unused] = key;
    auto built_in = built_in_gpus(type);
    if (!built_in) continue;
    auto g = gpus.find({zone, built_in->first, built_in->second});
    if (g == gpus.end()) continue;  // GPU unknown or not sold in this zone
    out.offerings.push_back(make_offering(type, region_of_zone[zone], zone,
                                          *catalog_accelerator(built_in->first), built_in->second,
                                          host, g->second));
  }
  // Pass 2b: GPUs attached to an n1 host.
  for (const auto& [key, g] : gpus) {
    const auto& [zone, gpu, count] = key;
    if (!is_n1_attachable(gpu)) continue;
    const std::string type = "n1-standard-" + std::to_string(8 * count);
    auto h = hosts.find({zone, type, 0});
    if (h == hosts.end()) continue;
    out.offerings.push_back(make_offering(type, region_of_zone[zone], zone,
                                          *catalog_accelerator(gpu), count, h->second, g));
  }
  return util::Status::ok();
}

}  // namespace trainyard::cloud
