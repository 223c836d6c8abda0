#include "cli/list_output.h"

#include <iostream>

#include <fmt/format.h>

#include "cli/output.h"

namespace trainyard::cli {

util::Status check_list_output(const std::string& output) {
  if (output.empty() || output == "wide" || output == "json" || output == "yaml" ||
      output == "name")
    return util::Status::ok();
  return util::invalid_argument(
      fmt::format("-o must be wide, json, yaml or name (got '{}')", output));
}

bool print_names(const nlohmann::json& items, const std::string& output, const std::string& kind,
                 const std::string& key) {
  if (output != "name") return false;
  if (!items.is_array()) return true;
  for (const auto& item : items) {
    if (item.contains(key)) std::cout << kind << "/" << cell(item[key]) << "\n";
  }
  return true;
}

std::string labels_cell(const nlohmann::json& labels) {
  std::string out;
  if (!labels.is_object()) return "-";
  for (const auto& [k, v] : labels.items()) out += (out.empty() ? "" : ",") + k + "=" + cell(v);
  return out.empty() ? "-" : out;
}

std::string labels_cell(const model::Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out.empty() ? "-" : out;
}

}  // namespace trainyard::cli
