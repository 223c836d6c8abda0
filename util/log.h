// Logging through spdlog with one named logger; level set once from the command line.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace trainyard::util {

// Sets the global level from "trace|debug|info|warn|error|off"; false if the name is unknown.
bool set_log_level(std::string_view level);

}  // namespace trainyard::util

#define TY_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define TY_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define TY_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
#define TY_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
