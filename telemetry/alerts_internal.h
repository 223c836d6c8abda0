// Helpers shared by the alert engine's files; not part of the telemetry interface.
#pragma once

#include <cstdint>
#include <string>

#include "util/clock.h"

namespace trainyard::telemetry {

// 3 s -> "3s", 1.5 s -> "1.5s", 5 min -> "5m", 90 min -> "1h30m" (to the millisecond).
std::string format_alert_duration(util::Duration d);

}  // namespace trainyard::telemetry
