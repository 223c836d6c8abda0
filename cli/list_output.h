// What every listing verb (ls, nodes, queues, checkpoints, alerts) accepts with -o, as kubectl:
// the table (no -o), `wide` (the table with more columns), `json`, `yaml`, and `name`: one
// "KIND/KEY" per line (job/12, node/gpu-0, queue/vision, checkpoint/400, alert/7) for scripts;
// every verb that takes a job also takes "job/12".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/labels.h"
#include "util/status.h"

namespace trainyard::cli {

inline constexpr const char* kListOutputHelp = "wide, json, yaml or name (KIND/KEY per line)";

// InvalidArgument naming the value and the choices for anything but "", wide, json, yaml, name.
util::Status check_list_output(const std::string& output);
// With -o name prints "<kind>/<item[key]>" for each of `items` and returns true; false (nothing
// printed) for any other output.
bool print_names(const nlohmann::json& items, const std::string& output, const std::string& kind,
                 const std::string& key);
// "team=nlp,tier=batch", or "-" when there are none.
std::string labels_cell(const nlohmann::json& labels);
std::string labels_cell(const model::Labels& labels);

}  // namespace trainyard::cli
