#include "server/config.h"

#include <csignal>

#include <fmt/format.h>

#include "model/cluster_config.h"
#include "model/quantity.h"
#include "model/yaml_reader.h"
#include "sched/policy.h"
#include "util/read_file.h"

namespace trainyard::server {
namespace {

using model::YamlField;
using model::YamlFields;
using model::YamlReader;

// The config file's own keys; name: and teams: (a cluster file's) are read by the cluster parser.
constexpr std::string_view kServerKeys[] = {"policy",
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

util::Result<util::Duration> seconds(const YamlReader& r, const YamlField& f, double lo,
                                     double hi) {
  TY_ASSIGN_OR_RETURN(const double s, r.number(f, lo, hi, "a number of seconds"));
  return util::seconds_f(s);
}

util::Result<int64_t> bytes(const YamlReader& r, const YamlField& f) {
  TY_ASSIGN_OR_RETURN(const std::string text, r.string(f));
  auto b = model::parse_bytes(text);
  if (!b.is_ok() || b->value() < 1024)
    return r.invalid(f, "a size of at least 1Ki", "like 64Mi; suffixes Ki, Mi, Gi, Ti, k, M, G, T");
  return b->value();
}

util::Status parse_backoff(const YamlReader& r, const YamlField& b, ServerConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(b, {"initialSeconds", "maxSeconds"}));
  if (const YamlField* initial = f.get("initialSeconds")) {
    TY_ASSIGN_OR_RETURN(out.retry_backoff_initial, seconds(r, *initial, 0, 86400));
  }
  if (const YamlField* max = f.get("maxSeconds")) {
    TY_ASSIGN_OR_RETURN(out.retry_backoff_max, seconds(r, *max, 0, 86400));
  }
  if (out.retry_backoff_max < out.retry_backoff_initial) {
    const YamlField* max = f.get("maxSeconds");
    return r.error(
        max != nullptr ? *max : *f.get("initialSeconds"),
        fmt::format("{}.maxSeconds ({} s{}) must be at least {}.initialSeconds ({} s)", b.path,
                    util::to_seconds(out.retry_backoff_max), max != nullptr ? "" : ", the default",
                    b.path, util::to_seconds(out.retry_backoff_initial)));
  }
  return util::Status::ok();
}

util::Status parse_telemetry(const YamlReader& r, const YamlField& t, ServerConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(t, {"interval", "ringSamples", "retentionDays"}));
  if (const YamlField* interval = f.get("interval")) {
    TY_ASSIGN_OR_RETURN(out.telemetry.interval, seconds(r, *interval, 0.05, 3600));
  }
  if (const YamlField* ring = f.get("ringSamples")) {
    TY_ASSIGN_OR_RETURN(const int64_t n, r.integer(*ring, 1, 1'000'000));
    out.telemetry.ring_samples = static_cast<int>(n);
  }
  if (const YamlField* days = f.get("retentionDays")) {
    TY_ASSIGN_OR_RETURN(const int64_t n, r.integer(*days, 1, 3650));
    out.telemetry.retention_days = static_cast<int>(n);
  }
  return util::Status::ok();
}

// tiresias: {queueThresholds: [3200, 25600], starvationFactor: 8} (GPU-seconds; a factor).
util::Status parse_tiresias(const YamlReader& r, const YamlField& t, ServerConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(t, {"queueThresholds", "starvationFactor"}));
  if (const YamlField* q = f.get("queueThresholds")) {
    TY_ASSIGN_OR_RETURN(std::vector<YamlField> items,
                        r.items(*q, "GPU-seconds in increasing order, e.g. [3200, 25600]"));
    if (items.empty())
      return r.invalid(*q, "a non-empty list of GPU-seconds", "e.g. [3200, 25600]");
    std::vector<double> v;
    for (const YamlField& item : items) {
      TY_ASSIGN_OR_RETURN(const double s, r.number(item, 1, 1e12, "a number of GPU-seconds"));
      if (!v.empty() && s <= v.back())
        return r.invalid(item, fmt::format("more than the entry before ({})", v.back()),
                         "the thresholds must increase");
      v.push_back(s);
    }
    out.policy.tiresias.queue_thresholds = std::move(v);
  }
  if (const YamlField* factor = f.get("starvationFactor")) {
    TY_ASSIGN_OR_RETURN(out.policy.tiresias.starvation_factor,
                        r.number(*factor, 0, 1e6, "a number", "0 = off"));
  }
  return util::Status::ok();
}

// goodput: {roundSeconds: 60, restartGain: 0.25}
util::Status parse_goodput(const YamlReader& r, const YamlField& g, ServerConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(g, {"roundSeconds", "restartGain"}));
  if (const YamlField* round = f.get("roundSeconds")) {
    TY_ASSIGN_OR_RETURN(out.policy.goodput.round, seconds(r, *round, 1, 86400));
  }
  if (const YamlField* gain = f.get("restartGain")) {
    TY_ASSIGN_OR_RETURN(
        out.policy.goodput.restart_gain,
        r.number(*gain, 0, 100, "a number", "0.25 = a restart must make the job 25% faster"));
  }
  return util::Status::ok();
}

// policy, placement and the preemption knobs: what the scheduler gets in its PolicyConfig.
util::Status parse_policy_keys(const YamlReader& r, const YamlFields& f, ServerConfig& out) {
  if (const YamlField* p = f.get("policy")) {
    TY_ASSIGN_OR_RETURN(std::string name, r.string(*p));
    if (auto traits = sched::find_policy(name); !traits.is_ok())
      return r.error(*p, fmt::format("{}: {}", p->path, traits.status().message()));
    out.policy.name = std::move(name);
  }
  if (const YamlField* p = f.get("placement")) {
    const std::string v = p->value.IsScalar() ? p->value.Scalar() : "";
    if (v != "pack" && v != "spread") return r.invalid(*p, "pack or spread");
    out.policy.placement =
        v == "pack" ? sched::PlacementStrategy::Pack : sched::PlacementStrategy::Spread;
  }
  if (const YamlField* m = f.get("minRuntimeSeconds")) {
    TY_ASSIGN_OR_RETURN(out.policy.min_runtime, seconds(r, *m, 0, 1e7));
  }
  if (const YamlField* g = f.get("goodput")) TY_RETURN_IF_ERROR(parse_goodput(r, *g, out));
  if (const YamlField* m = f.get("maxVictimSearches")) {
    TY_ASSIGN_OR_RETURN(const int64_t v, r.integer(*m, 0, 1'000'000, "0 = no limit"));
    out.policy.max_victim_searches = static_cast<int>(v);
  }
  if (const YamlField* h = f.get("fairShareHalfLifeSeconds")) {
    TY_ASSIGN_OR_RETURN(out.policy.fair.usage_half_life, seconds(r, *h, 0, 1e9));
  }
  if (const YamlField* t = f.get("tiresias")) TY_RETURN_IF_ERROR(parse_tiresias(r, *t, out));
  return util::Status::ok();
}

util::Status parse_own_keys(const YamlReader& r, const YamlFields& f, ServerConfig& out) {
  TY_RETURN_IF_ERROR(parse_policy_keys(r, f, out));
  if (const YamlField* i = f.get("reconcileIntervalSeconds")) {
    TY_ASSIGN_OR_RETURN(out.reconcile_interval, seconds(r, *i, 0.01, 60));
  }
  if (const YamlField* b = f.get("retryBackoff")) TY_RETURN_IF_ERROR(parse_backoff(r, *b, out));
  if (const YamlField* m = f.get("mtbfPriorSeconds")) {
    TY_ASSIGN_OR_RETURN(out.mtbf_prior, seconds(r, *m, 1, 1e9));
  }
  if (const YamlField* t = f.get("telemetry")) TY_RETURN_IF_ERROR(parse_telemetry(r, *t, out));
  if (const YamlField* a = f.get("alerts"))
    TY_RETURN_IF_ERROR(parse_alerts_config(r, *a, out.alerts));
  if (const YamlField* c = f.get("capacity")) TY_RETURN_IF_ERROR(parse_capacity_config(r, *c, out));
  if (const YamlField* w = f.get("workers")) TY_RETURN_IF_ERROR(parse_workers_config(r, *w, out));
  if (const YamlField* e = f.get("executor")) TY_RETURN_IF_ERROR(parse_executor_config(r, *e, out));
  if (const YamlField* s = f.get("noticeSignal")) {
    TY_ASSIGN_OR_RETURN(const std::string text, r.string(*s));
    auto sig = parse_signal(text);
    if (!sig.is_ok())
      return r.invalid(*s, "a signal",
                       "SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2 or SIGQUIT, with or without "
                       "SIG, or its number");
    out.notice_signal = *sig;
  }
  if (const YamlField* c = f.get("logCapBytes")) {
    TY_ASSIGN_OR_RETURN(out.log_cap_bytes, bytes(r, *c));
  }
  if (const YamlField* c = f.get("maxRequestBytes")) {
    TY_ASSIGN_OR_RETURN(out.max_request_bytes, bytes(r, *c));
  }
  return util::Status::ok();
}

}  // namespace

util::Result<ServerConfig> parse_server_config(const std::string& text, const std::string& file) {
  const YamlReader r(file);
  TY_ASSIGN_OR_RETURN(const YamlField root,
                      r.load_mapping(text, "a mapping of settings such as policy: and teams:"));
  model::ClusterParseOptions options{.require_nodes = false, .allow_nodes = false};
  for (std::string_view k : kServerKeys) options.extra_root_keys.emplace_back(k);
  // The cluster parser refuses unknown root keys (with a hint) and pools:/nodes:, and reads teams:.
  TY_ASSIGN_OR_RETURN(auto cluster, model::parse_cluster_root(r, root, options));
  ServerConfig out;
  out.teams = std::move(cluster.teams);
  std::vector<std::string_view> allowed(std::begin(kServerKeys), std::end(kServerKeys));
  allowed.insert(allowed.end(), {"name", "teams"});
  TY_ASSIGN_OR_RETURN(const YamlFields fields, r.fields(root, allowed));
  TY_RETURN_IF_ERROR(parse_own_keys(r, fields, out));
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
