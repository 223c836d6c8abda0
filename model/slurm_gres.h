// Maps Slurm GRES GPU type names (gres.conf Type=, AutoDetect=nvml names such as
// "nvidia_a100-sxm4-80gb") to trainyard accelerator names, so a Slurm site's nodes and jobs land
// on catalogued models. Pure functions; only models in model/accelerator's catalog are produced.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trainyard::model {

// The canonical accelerator name (as find_accelerator() returns it) for a GRES type, or nullopt
// when the type names no catalogued model (an AMD part, an A40, a MIG slice type, a typo).
// Case-insensitive; '-', '_' and ' ' separate words; vendor words ("nvidia", "tesla"), form
// factors ("sxm4", "pcie", "hbm3", "nvl") and memory ("80gb", "40g") may appear in any order.
std::optional<std::string> accelerator_for_gres_type(std::string_view type);
// The same, but an entry of `overrides` (GRES type -> accelerator name, keys compared without
// case) wins over the built-in rules. An override naming no catalogued model gives nullopt;
// callers validate overrides up front with find_accelerator().
std::optional<std::string> accelerator_for_gres_type(
    std::string_view type, const std::map<std::string, std::string>& overrides);

// One line for error messages: example GRES types that map, and how the models are named.
std::string known_gres_types_hint();

}  // namespace trainyard::model
