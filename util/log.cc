#include "util/log.h"

#include <string>

namespace trainyard::util {

bool set_log_level(std::string_view level) {
  auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") return false;
  spdlog::set_level(parsed);
  return true;
}

}  // namespace trainyard::util
