#include "server/alerts_config.h"

#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace trainyard::server {
namespace {

constexpr int64_t kMaxDurationMs = int64_t{7} * 24 * 3600 * 1000;  // a week

using Timing = telemetry::AlertRules::Timing;

util::Status located(const std::string& file, const YAML::Node& n, const std::string& msg) {
  const auto m = n.Mark();
  if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file, msg));
  return util::invalid_argument(fmt::format("{}:{}: {}", file, m.line + 1, msg));
}

std::string shown(const YAML::Node& n) {
  return n.IsScalar() ? n.Scalar() : "(not a scalar)";
}

util::Result<int64_t> duration_value(const std::string& file, const YAML::Node& n,
                                     const std::string& what, int64_t lo_ms) {
  const auto ms = n.IsScalar() ? parse_duration_ms(n.Scalar()) : std::nullopt;
  if (!ms || *ms < lo_ms || *ms > kMaxDurationMs)
    return located(file, n,
                   fmt::format("{} must be a duration like 90s, 5m or 1h (or a number of "
                               "seconds), {}s..7d, got '{}'",
                               what, static_cast<double>(lo_ms) / 1000, shown(n)));
  return *ms;
}

util::Result<double> number_value(const std::string& file, const YAML::Node& n,
                                  const std::string& what, double lo, double hi) {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v) || v < lo ||
      v > hi)
    return located(file, n,
                   fmt::format("{} must be a number in {}..{}, got '{}'", what, lo, hi, shown(n)));
  return v;
}

util::Result<bool> bool_value(const std::string& file, const YAML::Node& n,
                              const std::string& what) {
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
    return located(file, n, fmt::format("{} must be true or false, got '{}'", what, shown(n)));
  return v;
}

// Calls `key_fn(key, value)` for every entry of the map `n` (alerts.<section>); the function
// returns false for a key it does not know, which is then refused with the allowed list.
using KeyFn = std::function<util::Result<bool>(const std::string& key, const YAML::Node& value)>;
util::Status each_key(const std::string& file, const YAML::Node& n, const std::string& section,
                      const std::string& allowed, const KeyFn& key_fn) {
  if (!n.IsMap())
    return located(file, n, fmt::format("{} must be a map with keys {}", section, allowed));
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    TY_ASSIGN_OR_RETURN(const bool known, key_fn(key, kv.second));
    if (!known)
      return located(file, kv.first,
                     fmt::format("unknown key '{}.{}'; allowed: {}", section, key, allowed));
  }
  return util::Status::ok();
}

// The keys every rule has: enabled, for, resolveAfter.
util::Result<bool> timing_key(const std::string& file, const std::string& section,
                              const std::string& key, const YAML::Node& v, Timing& t) {
  const std::string what = section + "." + key;
  if (key == "enabled") {
    TY_ASSIGN_OR_RETURN(t.enabled, bool_value(file, v, what));
  } else if (key == "for") {
    TY_ASSIGN_OR_RETURN(t.for_ms, duration_value(file, v, what, 0));
  } else if (key == "resolveAfter") {
    TY_ASSIGN_OR_RETURN(t.resolve_after_ms, duration_value(file, v, what, 0));
  } else {
    return false;
  }
  return true;
}

util::Status parse_timing_only(const std::string& file, const YAML::Node& n,
                               const std::string& section, Timing& t) {
  return each_key(file, n, section, "enabled, for, resolveAfter",
                  [&](const std::string& key, const YAML::Node& v) {
                    return timing_key(file, section, key, v, t);
                  });
}

util::Status parse_temperature(const std::string& file, const YAML::Node& n,
                               telemetry::AlertRules::Temperature& t) {
  const std::string s = "alerts.temperature";
  return each_key(
      file, n, s, "enabled, for, resolveAfter, temperatureC, hysteresisC, slowdown",
      [&](const std::string& key, const YAML::Node& v) -> util::Result<bool> {
        if (key == "temperatureC") {
          TY_ASSIGN_OR_RETURN(t.threshold_c, number_value(file, v, s + "." + key, 1, 200));
        } else if (key == "hysteresisC") {
          TY_ASSIGN_OR_RETURN(t.hysteresis_c, number_value(file, v, s + "." + key, 0, 50));
        } else if (key == "slowdown") {
          TY_ASSIGN_OR_RETURN(t.slowdown, bool_value(file, v, s + "." + key));
        } else {
          return timing_key(file, s, key, v, t);
        }
        return true;
      });
}

util::Status parse_memory_leak(const std::string& file, const YAML::Node& n,
                               telemetry::AlertRules::MemoryLeak& t) {
  const std::string s = "alerts.memoryLeak";
  return each_key(
      file, n, s, "enabled, window, minRisePercent, for, resolveAfter",
      [&](const std::string& key, const YAML::Node& v) -> util::Result<bool> {
        if (key == "window") {
          TY_ASSIGN_OR_RETURN(t.window_ms, duration_value(file, v, s + ".window", 1000));
        } else if (key == "minRisePercent") {
          TY_ASSIGN_OR_RETURN(const double p, number_value(file, v, s + "." + key, 0.1, 100));
          t.min_rise_share = p / 100;
        } else {
          return timing_key(file, s, key, v, t);
        }
        return true;
      });
}

util::Status parse_idle(const std::string& file, const YAML::Node& n,
                        telemetry::AlertRules::Idle& t) {
  const std::string s = "alerts.idle";
  return each_key(
      file, n, s, "enabled, utilPercent, idleMinutes, idleFor, for, resolveAfter",
      [&](const std::string& key, const YAML::Node& v) -> util::Result<bool> {
        if (key == "utilPercent") {
          TY_ASSIGN_OR_RETURN(t.util_percent, number_value(file, v, s + "." + key, 0, 100));
        } else if (key == "idleMinutes") {
          TY_ASSIGN_OR_RETURN(const double m, number_value(file, v, s + "." + key, 0, 10080));
          t.for_ms = std::llround(m * 60'000);
        } else if (key == "idleFor") {
          TY_ASSIGN_OR_RETURN(t.for_ms, duration_value(file, v, s + "." + key, 0));
        } else {
          return timing_key(file, s, key, v, t);
        }
        return true;
      });
}

util::Status parse_budget(const std::string& file, const YAML::Node& n,
                          telemetry::AlertRules::Budget& t) {
  const std::string s = "alerts.budget";
  return each_key(file, n, s, "enabled, warnPercent, resolveAfter",
                  [&](const std::string& key, const YAML::Node& v) -> util::Result<bool> {
                    if (key == "warnPercent") {
                      TY_ASSIGN_OR_RETURN(const double p,
                                          number_value(file, v, s + "." + key, 1, 100));
                      t.warn_share = p / 100;
                      return true;
                    }
                    if (key == "for") return false;  // a budget alert fires when it is crossed
                    return timing_key(file, s, key, v, t);
                  });
}

util::Status parse_webhook(const std::string& file, const YAML::Node& n, WebhookConfig& w) {
  const std::string s = "alerts.webhook";
  return each_key(
      file, n, s, "url, timeoutSeconds",
      [&](const std::string& key, const YAML::Node& v) -> util::Result<bool> {
        if (key == "url") {
          const std::string url = v.IsScalar() ? v.Scalar() : "";
          const bool http = url.starts_with("http://") || url.starts_with("https://");
          const size_t host = url.find("://") + 3;
          if (!http || url.size() <= host || url[host] == '/' ||
              url.find_first_of(" \t\r\n") != std::string::npos)
            return located(file, v,
                           fmt::format("{}.url must be an http:// or https:// URL such as "
                                       "http://alerts.example:9000/hook, got '{}'",
                                       s, shown(v)));
          w.url = url;
        } else if (key == "timeoutSeconds") {
          TY_ASSIGN_OR_RETURN(const double sec, number_value(file, v, s + "." + key, 0.1, 60));
          w.timeout = util::seconds_f(sec);
        } else {
          return false;
        }
        return true;
      });
}

}  // namespace

std::optional<int64_t> parse_duration_ms(const std::string& text) {
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", 86'400'000}, {"", 1000}};
  for (const auto& [suffix, scale] : kUnits) {
    const std::string_view sfx(suffix);
    if (!text.ends_with(sfx) || text.size() == sfx.size()) continue;
    const std::string number = text.substr(0, text.size() - sfx.size());
    if (number.find_first_not_of("0123456789.") != std::string::npos) continue;
    try {
      size_t used = 0;
      const double v = std::stod(number, &used);
      if (used != number.size() || !std::isfinite(v) || v < 0) return std::nullopt;
      return std::llround(v * scale);
    } catch (const std::exception&) {
      return std::nullopt;  // "." or an out-of-range number
    }
  }
  return std::nullopt;
}

util::Status parse_alerts_config(const std::string& file, const YAML::Node& n, AlertsConfig& out) {
  auto& r = out.rules;
  return each_key(
      file, n, "alerts",
      "enabled, keepResolved, temperature, throttling, ecc, xid, memoryLeak, idle, budget, "
      "webhook",
      [&](const std::string& key, const YAML::Node& v) -> util::Result<bool> {
        if (key == "enabled") {
          TY_ASSIGN_OR_RETURN(out.enabled, bool_value(file, v, "alerts.enabled"));
        } else if (key == "keepResolved") {
          TY_ASSIGN_OR_RETURN(const double k,
                              number_value(file, v, "alerts.keepResolved", 0, 100000));
          if (k != std::floor(k))
            return located(file, v,
                           "alerts.keepResolved must be a whole number, got '" + shown(v) + "'");
          out.keep_resolved = static_cast<int>(k);
        } else if (key == "temperature") {
          TY_RETURN_IF_ERROR(parse_temperature(file, v, r.temperature));
        } else if (key == "throttling") {
          TY_RETURN_IF_ERROR(parse_timing_only(file, v, "alerts.throttling", r.throttling));
        } else if (key == "ecc") {
          TY_RETURN_IF_ERROR(parse_timing_only(file, v, "alerts.ecc", r.ecc));
        } else if (key == "xid") {
          TY_RETURN_IF_ERROR(parse_timing_only(file, v, "alerts.xid", r.xid));
        } else if (key == "memoryLeak") {
          TY_RETURN_IF_ERROR(parse_memory_leak(file, v, r.memory_leak));
        } else if (key == "idle") {
          TY_RETURN_IF_ERROR(parse_idle(file, v, r.idle));
        } else if (key == "budget") {
          TY_RETURN_IF_ERROR(parse_budget(file, v, r.budget));
        } else if (key == "webhook") {
          TY_RETURN_IF_ERROR(parse_webhook(file, v, out.webhook));
        } else {
          return false;
        }
        return true;
      });
}

}  // namespace trainyard::server
