#include "server/config.h"

#include <csignal>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "model/cluster_config.h"
#include "model/quantity.h"
#include "sched/policy.h"
#include "util/read_file.h"

namespace trainyard::server {
namespace {

constexpr const char* kServerKeys[] = {"policy",
                                       "placement",
                                       "reconcileIntervalSeconds",
                                       "minRuntimeSeconds",
                                       "maxVictimSearches",
                                       "fairShareHalfLifeSeconds",
                                       "tiresias",
                                       "goodput",
                                       "retryBackoff",
                                       "noticeSignal",
                                       "logCapBytes",
                                       "maxRequestBytes",
                                       "telemetry",
                                       "alerts",
                                       "mtbfPriorSeconds",
                                       "capacity",
                                       "workers",
                                       "executor"};

util::Status located(const std::string& file, const YAML::Node& n, const std::string& msg) {
  const auto m = n.Mark();
  if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file, msg));
  return util::invalid_argument(fmt::format("{}:{}: {}", file, m.line + 1, msg));
}

util::Result<double> seconds_value(const std::string& file, const YAML::Node& n,
                                   const std::string& what, double lo, double hi) {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= lo) || v > hi) {
    return located(file, n,
                   fmt::format("{} must be a number of seconds in {}..{}, got '{}'", what, lo, hi,
                               n.IsScalar() ? n.Scalar() : "(not a scalar)"));
  }
  return v;
}

util::Result<int64_t> bytes_value(const std::string& file, const YAML::Node& n,
                                  const std::string& what) {
  auto b = n.IsScalar() ? model::parse_bytes(n.Scalar()) : util::invalid_argument("not a scalar");
  if (!b.is_ok() || b->value() < 1024) {
    return located(file, n,
                   fmt::format("{} must be a size of at least 1Ki like 64Mi, got '{}'", what,
                               n.IsScalar() ? n.Scalar() : "(not a scalar)"));
  }
  return b->value();
}

util::Status parse_backoff(const std::string& file, const YAML::Node& n, ServerConfig& out) {
  if (!n.IsMap())
    return located(file, n, "retryBackoff must be {initialSeconds: N, maxSeconds: M}");
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    TY_ASSIGN_OR_RETURN(const double s,
                        seconds_value(file, kv.second, "retryBackoff." + key, 0, 86400));
    if (key == "initialSeconds") {
      out.retry_backoff_initial = util::seconds_f(s);
    } else if (key == "maxSeconds") {
      out.retry_backoff_max = util::seconds_f(s);
    } else {
      return located(file, kv.first,
                     fmt::format("unknown key 'retryBackoff.{}'; allowed: initialSeconds, "
                                 "maxSeconds",
                                 key));
    }
  }
  if (out.retry_backoff_max < out.retry_backoff_initial)
    return located(file, n, "retryBackoff.maxSeconds must be >= initialSeconds");
  return util::Status::ok();
}

util::Result<int> count_value(const std::string& file, const YAML::Node& n, const std::string& what,
                              int lo, int hi) {
  int v = 0;
  if (!n.IsScalar() || !YAML::convert<int>::decode(n, v) || v < lo || v > hi) {
    return located(file, n,
                   fmt::format("{} must be a whole number in {}..{}, got '{}'", what, lo, hi,
                               n.IsScalar() ? n.Scalar() : "(not a scalar)"));
  }
  return v;
}

util::Status parse_telemetry(const std::string& file, const YAML::Node& n, ServerConfig& out) {
  if (!n.IsMap())
    return located(file, n,
                   "telemetry must be {interval: 1, ringSamples: 3600, retentionDays: 30}");
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    if (key == "interval") {
      TY_ASSIGN_OR_RETURN(const double s,
                          seconds_value(file, kv.second, "telemetry.interval", 0.05, 3600));
      out.telemetry.interval = util::seconds_f(s);
    } else if (key == "ringSamples") {
      TY_ASSIGN_OR_RETURN(out.telemetry.ring_samples,
                          count_value(file, kv.second, "telemetry.ringSamples", 1, 1'000'000));
    } else if (key == "retentionDays") {
      TY_ASSIGN_OR_RETURN(out.telemetry.retention_days,
                          count_value(file, kv.second, "telemetry.retentionDays", 1, 3650));
    } else {
      return located(file, kv.first,
                     fmt::format("unknown key 'telemetry.{}'; allowed: interval, ringSamples, "
                                 "retentionDays",
                                 key));
    }
  }
  return util::Status::ok();
}

// tiresias: {queueThresholds: [3200, 25600], starvationFactor: 8} (GPU-seconds; a factor).
util::Status parse_tiresias(const std::string& file, const YAML::Node& t, ServerConfig& out) {
  if (!t.IsMap())
    return located(file, t, "tiresias must be a map: {queueThresholds, starvationFactor}");
  for (const auto& kv : t) {
    const std::string key = kv.first.Scalar();
    if (key != "queueThresholds" && key != "starvationFactor") {
      return located(file, kv.first,
                     fmt::format("unknown key tiresias.{}; known: queueThresholds, "
                                 "starvationFactor",
                                 key));
    }
  }
  if (const auto q = t["queueThresholds"]) {
    if (!q.IsSequence() || q.size() == 0) {
      return located(file, q, "tiresias.queueThresholds must be a list of GPU-seconds");
    }
    std::vector<double> v;
    for (const auto& e : q) {
      TY_ASSIGN_OR_RETURN(const double s,
                          seconds_value(file, e, "each tiresias.queueThresholds entry", 1, 1e12));
      if (!v.empty() && s <= v.back()) {
        return located(file, e, "tiresias.queueThresholds must increase");
      }
      v.push_back(s);
    }
    out.policy.tiresias.queue_thresholds = std::move(v);
  }
  if (const auto f = t["starvationFactor"]) {
    double v = 0;
    if (!f.IsScalar() || !YAML::convert<double>::decode(f, v) || !(v >= 0) || v > 1e6) {
      return located(file, f, "tiresias.starvationFactor must be a number >= 0 (0 = off)");
    }
    out.policy.tiresias.starvation_factor = v;
  }
  return util::Status::ok();
}

util::Status parse_own_keys(const std::string& file, const YAML::Node& root, ServerConfig& out) {
  if (const auto p = root["policy"]) {
    if (!p.IsScalar()) return located(file, p, "policy must be a policy name such as fair");
    auto traits = sched::find_policy(p.Scalar());
    if (!traits.is_ok()) return located(file, p, traits.status().message());
    out.policy.name = p.Scalar();
  }
  if (const auto p = root["placement"]) {
    const std::string v = p.IsScalar() ? p.Scalar() : "";
    if (v != "pack" && v != "spread")
      return located(file, p, fmt::format("placement must be pack or spread, got '{}'", v));
    out.policy.placement =
        v == "pack" ? sched::PlacementStrategy::Pack : sched::PlacementStrategy::Spread;
  }
  if (const auto m = root["minRuntimeSeconds"]) {
    TY_ASSIGN_OR_RETURN(const double s, seconds_value(file, m, "minRuntimeSeconds", 0, 1e7));
    out.policy.min_runtime = util::seconds_f(s);
  }
  if (const auto g = root["goodput"]) {
    if (!g.IsMap()) return located(file, g, "goodput must be a map: {roundSeconds, restartGain}");
    for (const auto& kv : g) {
      const std::string key = kv.first.as<std::string>("");
      if (key == "roundSeconds") {
        TY_ASSIGN_OR_RETURN(const double s,
                            seconds_value(file, kv.second, "goodput.roundSeconds", 1, 86400));
        out.policy.goodput.round = util::seconds_f(s);
      } else if (key == "restartGain") {
        double v = -1;
        if (!kv.second.IsScalar() || !YAML::convert<double>::decode(kv.second, v) || v < 0 ||
            v > 100) {
          return located(file, kv.second,
                         "goodput.restartGain must be a number 0..100 (0.25 = a restart must "
                         "make the job 25% faster)");
        }
        out.policy.goodput.restart_gain = v;
      } else {
        return located(
            file, kv.first,
            fmt::format("unknown key goodput.{}; known: roundSeconds, restartGain", key));
      }
    }
  }
  if (const auto m = root["maxVictimSearches"]) {
    int64_t v = -1;
    if (!m.IsScalar() || !YAML::convert<int64_t>::decode(m, v) || v < 0 || v > 1000000) {
      return located(file, m, "maxVictimSearches must be a whole number 0..1000000 (0 = no limit)");
    }
    out.policy.max_victim_searches = static_cast<int>(v);
  }
  if (const auto h = root["fairShareHalfLifeSeconds"]) {
    TY_ASSIGN_OR_RETURN(const double s, seconds_value(file, h, "fairShareHalfLifeSeconds", 0, 1e9));
    out.policy.fair.usage_half_life = util::seconds_f(s);
  }
  if (const auto t = root["tiresias"]) TY_RETURN_IF_ERROR(parse_tiresias(file, t, out));
  if (const auto r = root["reconcileIntervalSeconds"]) {
    TY_ASSIGN_OR_RETURN(const double s,
                        seconds_value(file, r, "reconcileIntervalSeconds", 0.01, 60));
    out.reconcile_interval = util::seconds_f(s);
  }
  if (const auto b = root["retryBackoff"]) TY_RETURN_IF_ERROR(parse_backoff(file, b, out));
  if (const auto m = root["mtbfPriorSeconds"]) {
    TY_ASSIGN_OR_RETURN(const double s, seconds_value(file, m, "mtbfPriorSeconds", 1, 1e9));
    out.mtbf_prior = util::seconds_f(s);
  }
  if (const auto t = root["telemetry"]) TY_RETURN_IF_ERROR(parse_telemetry(file, t, out));
  if (const auto a = root["alerts"]) TY_RETURN_IF_ERROR(parse_alerts_config(file, a, out.alerts));
  if (const auto c = root["capacity"]) TY_RETURN_IF_ERROR(parse_capacity_config(file, c, out));
  if (const auto w = root["workers"]) TY_RETURN_IF_ERROR(parse_workers_config(file, w, out));
  if (const auto e = root["executor"]) TY_RETURN_IF_ERROR(parse_executor_config(file, e, out));
  if (const auto s = root["noticeSignal"]) {
    auto sig = s.IsScalar() ? parse_signal(s.Scalar()) : util::invalid_argument("not a scalar");
    if (!sig.is_ok()) return located(file, s, "noticeSignal: " + sig.status().message());
    out.notice_signal = *sig;
  }
  if (const auto c = root["logCapBytes"]) {
    TY_ASSIGN_OR_RETURN(out.log_cap_bytes, bytes_value(file, c, "logCapBytes"));
  }
  if (const auto c = root["maxRequestBytes"]) {
    TY_ASSIGN_OR_RETURN(out.max_request_bytes, bytes_value(file, c, "maxRequestBytes"));
  }
  return util::Status::ok();
}

}  // namespace

util::Result<ServerConfig> parse_server_config(const std::string& text, const std::string& file) {
  ServerConfig out;
  model::ClusterParseOptions options{.require_nodes = false, .allow_nodes = false};
  for (const char* k : kServerKeys) options.extra_root_keys.emplace_back(k);
  TY_ASSIGN_OR_RETURN(auto cluster, model::parse_cluster_yaml(text, file, options));
  out.teams = std::move(cluster.teams);
  try {
    const YAML::Node root = YAML::Load(text);
    if (root.IsMap()) TY_RETURN_IF_ERROR(parse_own_keys(file, root, out));
  } catch (const YAML::Exception& e) {
    return util::invalid_argument(
        fmt::format("{}:{}: not valid YAML: {}", file, e.mark.line + 1, e.msg));
  }
  return out;
}

util::Result<ServerConfig> load_server_config(const std::string& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path, {.what = "the config file"}));
  return parse_server_config(text, path);
}

namespace {
constexpr std::pair<const char*, int> kSignals[] = {{"TERM", SIGTERM}, {"INT", SIGINT},
                                                    {"HUP", SIGHUP},   {"USR1", SIGUSR1},
                                                    {"USR2", SIGUSR2}, {"QUIT", SIGQUIT}};
}

util::Result<int> parse_signal(const std::string& text) {
  std::string name = text;
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (const auto& [n, v] : kSignals) {
    if (name == n || text == std::to_string(v)) return v;
  }
  return util::invalid_argument(fmt::format(
      "unknown signal '{}'; use one of SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGQUIT", text));
}

std::string signal_name(int sig) {
  for (const auto& [n, v] : kSignals) {
    if (v == sig) return std::string("SIG") + n;
  }
  return std::to_string(sig);
}

}  // namespace trainyard::server
