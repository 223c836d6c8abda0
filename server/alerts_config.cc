// The `alerts:` section read through the config file's YamlReader: each rule's mapping, its
// thresholds, and the webhook.
#include "server/alerts_config.h"

#include <cmath>

#include <fmt/format.h>

#include "model/yaml_reader.h"

namespace trainyard::server {
namespace {

using model::YamlField;
using model::YamlFields;
using model::YamlReader;

constexpr int64_t kMaxDurationMs = int64_t{7} * 24 * 3600 * 1000;  // a week

using Timing = telemetry::AlertRules::Timing;

constexpr std::string_view kAlertsKeys[] = {"enabled", "keepResolved", "temperature", "throttling",
                                            "ecc",     "xid",          "memoryLeak",  "idle",
                                            "budget",  "webhook"};
constexpr std::string_view kTimingKeys[] = {"enabled", "for", "resolveAfter"};
constexpr std::string_view kTemperatureKeys[] = {"enabled",      "for",         "resolveAfter",
                                                 "temperatureC", "hysteresisC", "slowdown"};
constexpr std::string_view kMemoryLeakKeys[] = {"enabled", "window", "minRisePercent", "for",
                                                "resolveAfter"};
constexpr std::string_view kIdleKeys[] = {"enabled", "utilPercent", "idleMinutes",
                                          "idleFor", "for",         "resolveAfter"};
// No `for`: a budget alert fires when the level is crossed.
constexpr std::string_view kBudgetKeys[] = {"enabled", "warnPercent", "resolveAfter"};

util::Result<util::Duration> duration(const YamlReader& r, const YamlField& f, int64_t lo_ms) {
  const auto ms = f.value.IsScalar() ? parse_duration_ms(f.value.Scalar()) : std::nullopt;
  if (!ms || *ms < lo_ms || *ms > kMaxDurationMs)
    return r.invalid(f, fmt::format("a duration from {}s to 7d", static_cast<double>(lo_ms) / 1000),
                     "like 90s, 5m or 1h, or a number of seconds");
  return util::Duration(std::chrono::milliseconds(*ms));
}

// The keys every rule has: enabled, for, resolveAfter.
util::Status timing(const YamlReader& r, const YamlFields& f, Timing& t) {
  if (const YamlField* v = f.get("enabled")) {
    TY_ASSIGN_OR_RETURN(t.enabled, r.boolean(*v));
  }
  if (const YamlField* v = f.get("for")) {
    TY_ASSIGN_OR_RETURN(t.fire_after, duration(r, *v, 0));
  }
  if (const YamlField* v = f.get("resolveAfter")) {
    TY_ASSIGN_OR_RETURN(t.resolve_after, duration(r, *v, 0));
  }
  return util::Status::ok();
}

util::Status parse_timing_only(const YamlReader& r, const YamlField& section, Timing& t) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kTimingKeys));
  return timing(r, f, t);
}

util::Status parse_temperature(const YamlReader& r, const YamlField& section,
                               telemetry::AlertRules::Temperature& t) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kTemperatureKeys));
  if (const YamlField* v = f.get("temperatureC")) {
    TY_ASSIGN_OR_RETURN(t.threshold_c, r.number(*v, 1, 200));
  }
  if (const YamlField* v = f.get("hysteresisC")) {
    TY_ASSIGN_OR_RETURN(t.hysteresis_c, r.number(*v, 0, 50));
  }
  if (const YamlField* v = f.get("slowdown")) {
    TY_ASSIGN_OR_RETURN(t.slowdown, r.boolean(*v));
  }
  return timing(r, f, t);
}

util::Status parse_memory_leak(const YamlReader& r, const YamlField& section,
                               telemetry::AlertRules::MemoryLeak& t) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kMemoryLeakKeys));
  if (const YamlField* v = f.get("window")) {
    TY_ASSIGN_OR_RETURN(t.window, duration(r, *v, 1000));
  }
  if (const YamlField* v = f.get("minRisePercent")) {
    TY_ASSIGN_OR_RETURN(const double p, r.number(*v, 0.1, 100));
    t.min_rise_share = p / 100;
  }
  return timing(r, f, t);
}

util::Status parse_idle(const YamlReader& r, const YamlField& section,
                        telemetry::AlertRules::Idle& t) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kIdleKeys));
  // idleMinutes, idleFor and for all set how long a GPU must be idle; one may be given.
  const YamlField* first = nullptr;
  for (std::string_view key : {"idleMinutes", "idleFor", "for"}) {
    const YamlField* v = f.get(key);
    if (v == nullptr) continue;
    if (first != nullptr)
      return r.error_at(
          v->key, fmt::format("{} and {} set the same time; give only one", first->path, v->path));
    first = v;
  }
  if (const YamlField* v = f.get("utilPercent")) {
    TY_ASSIGN_OR_RETURN(t.util_percent, r.number(*v, 0, 100));
  }
  if (const YamlField* v = f.get("idleMinutes")) {
    TY_ASSIGN_OR_RETURN(const double m, r.number(*v, 0, 10080, "a number of minutes"));
    t.fire_after = std::chrono::milliseconds(std::llround(m * 60'000));
  }
  if (const YamlField* v = f.get("idleFor")) {
    TY_ASSIGN_OR_RETURN(t.fire_after, duration(r, *v, 0));
  }
  return timing(r, f, t);
}

util::Status parse_budget(const YamlReader& r, const YamlField& section,
                          telemetry::AlertRules::Budget& t) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kBudgetKeys));
  if (const YamlField* v = f.get("warnPercent")) {
    TY_ASSIGN_OR_RETURN(const double p, r.number(*v, 1, 100));
    t.warn_share = p / 100;
  }
  return timing(r, f, t);
}

util::Status parse_webhook(const YamlReader& r, const YamlField& section, WebhookConfig& w) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, {"url", "timeoutSeconds"}));
  if (const YamlField* v = f.get("url")) {
    const std::string url = v->value.IsScalar() ? v->value.Scalar() : "";
    const bool http = url.starts_with("http://") || url.starts_with("https://");
    const size_t host = url.find("://") + 3;
    if (!http || url.size() <= host || url[host] == '/' ||
        url.find_first_of(" \t\r\n") != std::string::npos)
      return r.invalid(*v, "an http:// or https:// URL", "such as http://alerts.example:9000/hook");
    TY_ASSIGN_OR_RETURN(w.url, r.string(*v));
  }
  if (const YamlField* v = f.get("timeoutSeconds")) {
    TY_ASSIGN_OR_RETURN(const double sec, r.number(*v, 0.1, 60, "a number of seconds"));
    w.timeout = util::seconds_f(sec);
  }
  return util::Status::ok();
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

util::Status parse_alerts_config(const YamlReader& r, const YamlField& section, AlertsConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kAlertsKeys));
  auto& rules = out.rules;
  if (const YamlField* v = f.get("enabled")) {
    TY_ASSIGN_OR_RETURN(out.enabled, r.boolean(*v));
  }
  if (const YamlField* v = f.get("keepResolved")) {
    TY_ASSIGN_OR_RETURN(const int64_t k, r.integer(*v, 0, 100000));
    out.keep_resolved = static_cast<int>(k);
  }
  if (const YamlField* v = f.get("temperature"))
    TY_RETURN_IF_ERROR(parse_temperature(r, *v, rules.temperature));
  if (const YamlField* v = f.get("throttling"))
    TY_RETURN_IF_ERROR(parse_timing_only(r, *v, rules.throttling));
  if (const YamlField* v = f.get("ecc")) TY_RETURN_IF_ERROR(parse_timing_only(r, *v, rules.ecc));
  if (const YamlField* v = f.get("xid")) TY_RETURN_IF_ERROR(parse_timing_only(r, *v, rules.xid));
  if (const YamlField* v = f.get("memoryLeak"))
    TY_RETURN_IF_ERROR(parse_memory_leak(r, *v, rules.memory_leak));
  if (const YamlField* v = f.get("idle")) TY_RETURN_IF_ERROR(parse_idle(r, *v, rules.idle));
  if (const YamlField* v = f.get("budget")) TY_RETURN_IF_ERROR(parse_budget(r, *v, rules.budget));
  if (const YamlField* v = f.get("webhook")) TY_RETURN_IF_ERROR(parse_webhook(r, *v, out.webhook));
  return util::Status::ok();
}

}  // namespace trainyard::server
