// The offerings catalog: GPU machines a cloud sells, with their on-demand and spot prices,
// loaded from SkyPilot-format catalog CSVs (docs/cloud.md). Columns are read by header name;
// a bad value is an error naming file, line and column. GCP rows are joined host + GPUs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::cloud {

struct Offering {
  std::string provider;       // "aws", "gcp", "azure", "lambda", "vast", ...
  std::string instance_type;  // "p5.48xlarge"
  std::string region;
  std::string zone;         // empty where the provider's file has no zones
  std::string accelerator;  // canonical model name ("H100-80GB")
  int gpus_per_node = 0;
  double vcpus = 0;
  double memory_gib = 0;
  // USD per node-hour. Either may be absent (AWS p5e has no on-demand price, Lambda no spot).
  // Spot may be >= on-demand in the data; such rows are kept as they are.
  std::optional<double> on_demand_per_hour;
  std::optional<double> spot_per_hour;
};

struct Catalog {
  std::vector<Offering> offerings;
  // Rows left out because their GPU is not in model::accelerator_catalog(), by CSV GPU name.
  std::map<std::string, int> skipped_unknown_gpu;
  // Rows selling a fraction of a GPU (Azure NVv4/NVadsA10: "0.333"), by CSV GPU name.
  std::map<std::string, int> skipped_fractional_gpu;
  int skipped_total() const;
};

// The canonical accelerator for a catalog GPU name, or nullopt when not catalogued. In SkyPilot
// catalogs "A100" is the 40 GB part and "H100-MEGA" an H100-80GB machine with more network.
std::optional<std::string> catalog_accelerator(std::string_view csv_gpu_name);

// Parses one provider's catalog text (`name` prefixes errors) and appends to `out`. GCP text
// (provider "gcp") holds host rows and GPU rows that are joined per zone (docs/cloud.md).
util::Status parse_catalog_csv(std::string_view text, const std::string& name,
                               const std::string& provider, Catalog& out);

// Loads every "<provider>_*.csv" in `dir` except the Spot Advisor file; the provider is the
// file name's prefix before the first '_'. Files are read in name order, so the result is stable.
util::Result<Catalog> load_catalog(const std::string& dir);

}  // namespace trainyard::cloud
