// Output formatting shared by the client commands: kubectl-like aligned tables, JSON and YAML
// renderings of API objects, and short ages ("3m", "2h").
#pragma once

#include <string>
#include <vector>

#include <optional>

#include <nlohmann/json.hpp>

#include "model/api_views.h"

namespace trainyard::cli {

// Columns separated by three spaces, each as wide as its widest cell; header in capitals.
std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows);
std::string to_yaml(const nlohmann::json& j);
// Prints `j` to stdout as JSON when `output` is "json", as YAML when "yaml", and returns true;
// false (nothing printed) for any other value, i.e. the command's own table form.
bool print_structured(const nlohmann::json& j, const std::string& output);
// "2017-10-09T07:01:55.123Z" -> "5m" relative to now; "-" for null or unparsable.
std::string age_of(const nlohmann::json& time);
std::string age_of(const std::optional<std::string>& time);
// An optional text as a cell: "-" without one.
std::string cell(const std::optional<std::string>& v);
// A JSON value as a cell: strings bare, null as "-", numbers and others dumped.
std::string cell(const nlohmann::json& v);
// "job 12 submitted: name (team t)", or just the id when `quiet` (for scripts).
void print_submitted(const model::SubmitReplyView& reply, bool quiet);

}  // namespace trainyard::cli
