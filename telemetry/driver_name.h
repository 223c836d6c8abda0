// Maps the device names NVIDIA's driver reports ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB")
// to catalogued accelerator models, and MIG device names to their profiles. Pure functions, kept
// apart from the NVML sampler so they can be tested on a machine without a driver.
#pragma once

#include <string>
#include <string_view>

#include "model/quantity.h"

namespace trainyard::telemetry {

// The canonical model ("H100-80GB") for a driver's device name, or the name unchanged (trimmed)
// when no catalogued model matches. `memory` (0 = unknown) picks between memory variants when
// the name does not say, and rejects a match whose catalogued memory is more than 12% off (so an
// "H100 NVL" with 94 GB is not reported as an H100-80GB).
std::string model_from_driver_name(std::string_view driver_name, model::Bytes memory);

// The MIG profile of an instance: taken from its name when it carries one ("NVIDIA
// A100-SXM4-40GB MIG 1g.5gb" -> "1g.5gb"), else the profile of `parent_model` closest to
// `memory`. Empty when neither tells.
std::string mig_profile_from_driver_name(std::string_view mig_name, std::string_view parent_model,
                                         model::Bytes memory);

}  // namespace trainyard::telemetry
