#include "cloud/catalog.h"

#include <algorithm>
#include <filesystem>

#include "cloud/catalog_fields.h"
#include "model/accelerator.h"
#include "util/csv_table.h"

namespace trainyard::cloud {

util::Status parse_gcp_catalog(const util::CsvTable& table, Catalog& out);  // gcp_catalog.cc

namespace {

using internal::read_amount;
using internal::read_gpu_count;
using internal::read_price;
using internal::read_text;

struct Columns {
  int instance_type, gpu_name, gpu_count, vcpus, memory, price, spot, region, zone;
};

util::Result<Columns> find_columns(const util::CsvTable& t) {
  Columns c{};
  TY_ASSIGN_OR_RETURN(c.instance_type, t.require_column("InstanceType"));
  TY_ASSIGN_OR_RETURN(c.gpu_name, t.require_column("AcceleratorName"));
  TY_ASSIGN_OR_RETURN(c.gpu_count, t.require_column("AcceleratorCount"));
  TY_ASSIGN_OR_RETURN(c.vcpus, t.require_column("vCPUs"));
  TY_ASSIGN_OR_RETURN(c.memory, t.require_column("MemoryGiB"));
  TY_ASSIGN_OR_RETURN(c.price, t.require_column("Price"));
  TY_ASSIGN_OR_RETURN(c.region, t.require_column("Region"));
  // Lambda has no spot prices and Azure, Lambda and Vast no zones: optional columns.
  c.spot = t.find_column("SpotPrice");
  c.zone = t.find_column("AvailabilityZone");
  return c;
}

// One row of a provider whose rows are whole machines (all but GCP).
util::Status parse_machine_row(const util::CsvTable& t, size_t row, const Columns& c,
                               const std::string& provider, Catalog& out) {
  TY_ASSIGN_OR_RETURN(std::string gpu_name, read_text(t, row, c.gpu_name));
  Offering o;
  o.provider = provider;
  TY_ASSIGN_OR_RETURN(o.instance_type, read_text(t, row, c.instance_type));
  TY_ASSIGN_OR_RETURN(double gpu_count, read_gpu_count(t, row, c.gpu_count));
  TY_ASSIGN_OR_RETURN(o.vcpus, read_amount(t, row, c.vcpus, false));
  TY_ASSIGN_OR_RETURN(o.memory_gib, read_amount(t, row, c.memory, false));
  TY_ASSIGN_OR_RETURN(o.on_demand_per_hour, read_price(t, row, c.price));
  TY_ASSIGN_OR_RETURN(o.spot_per_hour, read_price(t, row, c.spot));
  TY_ASSIGN_OR_RETURN(o.region, read_text(t, row, c.region));
  if (c.zone >= 0) o.zone = std::string(t.field(row, c.zone));
  // Values are checked before the GPU is looked up so a bad row is reported, not skipped.
  auto accel = catalog_accelerator(gpu_name);
  const auto whole = internal::whole_gpus(gpu_count);
  if (!whole) {
    ++out.skipped_fractional_gpu[gpu_name];
    return util::Status::ok();
  }
  o.gpus_per_node = *whole;
  if (!accel) {
    ++out.skipped_unknown_gpu[gpu_name];
    return util::Status::ok();
  }
  o.accelerator = *accel;
  out.offerings.push_back(std::move(o));
  return util::Status::ok();
}

}  // namespace

int Catalog::skipped_total() const {
  int n = 0;
  for (const auto& [name, count] : skipped_unknown_gpu) n += count;
  for (const auto& [name, count] : skipped_fractional_gpu) n += count;
  return n;
}

std::optional<std::string> catalog_accelerator(std::string_view csv_gpu_name) {
  // model's alias "A100" means the 80 GB part (traces), but SkyPilot catalogs write
  // "A100-80GB" for that one and "A100" for the 40 GB part.
  if (csv_gpu_name == "A100") return std::string("A100-40GB");
  if (csv_gpu_name == "H100-MEGA") return std::string("H100-80GB");
  const model::Accelerator* a = model::find_accelerator(csv_gpu_name);
  if (a == nullptr) return std::nullopt;
  return std::string(a->name);
}

util::Status parse_catalog_table(const util::CsvTable& table, const std::string& provider,
                                 Catalog& out) {
  if (provider == "gcp") return parse_gcp_catalog(table, out);
  TY_ASSIGN_OR_RETURN(Columns cols, find_columns(table));
  for (size_t row = 0; row < table.row_count(); ++row) {
    TY_RETURN_IF_ERROR(parse_machine_row(table, row, cols, provider, out));
  }
  return util::Status::ok();
}

util::Status parse_catalog_csv(std::string_view text, const std::string& name,
                               const std::string& provider, Catalog& out) {
  TY_ASSIGN_OR_RETURN(util::CsvTable table, util::CsvTable::parse(text, name, util::kLenientCsv));
  return parse_catalog_table(table, provider, out);
}

util::Result<Catalog> load_catalog(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return util::not_found(dir +
                           ": not a directory (pass the catalog folder, e.g. shared/catalog)");
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string fname = entry.path().filename().string();
    if (entry.path().extension() != ".csv" || fname.find('_') == std::string::npos) continue;
    if (fname.find("spot_advisor") != std::string::npos) continue;  // not a price list
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  Catalog out;
  for (const auto& path : files) {
    const std::string fname = path.filename().string();
    TY_ASSIGN_OR_RETURN(util::CsvTable table,
                        util::CsvTable::read_file(path.string(), util::kLenientCsv));
    TY_RETURN_IF_ERROR(parse_catalog_table(table, fname.substr(0, fname.find('_')), out));
  }
  if (files.empty()) return util::not_found(dir + ": no <provider>_*.csv catalog files found");
  return out;
}

}  // namespace trainyard::cloud
