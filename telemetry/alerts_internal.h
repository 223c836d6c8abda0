// Helpers shared by the alert engine's files; not part of the telemetry interface.
#pragma once

#include <cstdint>
#include <string>

namespace trainyard::telemetry {

// 3000 -> "3s", 1500 -> "1.5s", 300000 -> "5m", 5400000 -> "1h30m".
std::string format_alert_duration(int64_t ms);

}  // namespace trainyard::telemetry
