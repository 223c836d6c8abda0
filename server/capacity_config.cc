// The server config's `capacity:` section: which provider sells nodes (static or simcloud), the
// price catalog, simcloud's knobs for live runs, and the cloud pools the autoscaler may buy.
// Errors name file:line:column and what to write instead, like the rest of the config.
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "server/config.h"

namespace trainyard::server {
namespace {

class CapacityParser {
 public:
  explicit CapacityParser(const std::string& file) : file_(file) {}

  util::Status error(const YAML::Node& n, const std::string& msg) const {
    const auto m = n.Mark();
    if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file_, msg));
    return util::invalid_argument(
        fmt::format("{}:{}:{}: {}", file_, m.line + 1, m.column + 1, msg));
  }

  util::Status only_keys(const YAML::Node& map, const std::string& where,
                         std::initializer_list<std::string_view> allowed) const {
    if (!map.IsMap()) return error(map, where + " must be a mapping of key: value");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      bool ok = false;
      std::string list;
      for (auto a : allowed) {
        ok = ok || key == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!ok)
        return error(kv.first,
                     fmt::format("unknown key '{}' in {}; allowed: {}", key, where, list));
    }
    return util::Status::ok();
  }

  util::Result<std::string> str(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar() || n.Scalar().empty()) return error(n, what + " must be a non-empty string");
    return n.Scalar();
  }

  util::Result<double> number(const YAML::Node& n, const std::string& what, double lo,
                              double hi) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= lo) || v > hi)
      return error(n, fmt::format("{} must be a number in {}..{}, got '{}'", what, lo, hi,
                                  n.IsScalar() ? n.Scalar() : "(not a scalar)"));
    return v;
  }

  util::Result<int64_t> integer(const YAML::Node& n, const std::string& what, int64_t lo,
                                int64_t hi) const {
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v) || v < lo || v > hi)
      return error(n, fmt::format("{} must be a whole number in {}..{}, got '{}'", what, lo, hi,
                                  n.IsScalar() ? n.Scalar() : "(not a scalar)"));
    return v;
  }

  util::Result<model::Pool> pool(const YAML::Node& p) {
    TY_RETURN_IF_ERROR(only_keys(p, "a capacity pool",
                                 {"name", "kind", "provider", "instanceType", "region", "zones",
                                  "minNodes", "maxNodes", "idleTimeout", "priority", "labels"}));
    model::Pool pool;
    pool.autoscaled = true;
    pool.kind = model::PoolKind::OnDemand;
    if (!p["name"]) return error(p, "a pool needs name: <pool name>");
    TY_ASSIGN_OR_RETURN(pool.name, str(p["name"], "name"));
    if (pool.name == "local" || !names_.insert(pool.name).second)
      return error(p["name"], fmt::format("pool name '{}' is taken (pool names are unique and "
                                          "'local' is this machine's)",
                                          pool.name));
    if (p["kind"]) {
      TY_ASSIGN_OR_RETURN(const std::string kind, str(p["kind"], "kind"));
      if (kind == "spot") {
        pool.kind = model::PoolKind::Spot;
      } else if (kind != "on-demand") {
        return error(p["kind"], fmt::format("kind must be spot or on-demand, got '{}'", kind));
      }
    }
    if (!p["provider"])
      return error(p, fmt::format("pool '{}' needs provider: (aws, gcp, ...)", pool.name));
    TY_ASSIGN_OR_RETURN(pool.provider, str(p["provider"], "provider"));
    if (!p["instanceType"])
      return error(p, fmt::format("pool '{}' needs instanceType: (e.g. p3.2xlarge)", pool.name));
    TY_ASSIGN_OR_RETURN(pool.instance_type, str(p["instanceType"], "instanceType"));
    if (p["region"]) {
      TY_ASSIGN_OR_RETURN(pool.region, str(p["region"], "region"));
    }
    if (const auto z = p["zones"]) {
      if (!z.IsSequence()) return error(z, "zones must be a list of zone names like [us-east-1a]");
      for (const auto& e : z) {
        TY_ASSIGN_OR_RETURN(std::string zone, str(e, "a zone"));
        pool.zones.push_back(std::move(zone));
      }
    }
    if (!p["maxNodes"])
      return error(p, fmt::format("pool '{}' needs maxNodes: <count>", pool.name));
    TY_ASSIGN_OR_RETURN(const int64_t mx, integer(p["maxNodes"], "maxNodes", 1, 1000));
    pool.max_nodes = static_cast<int>(mx);
    if (p["minNodes"]) {
      TY_ASSIGN_OR_RETURN(const int64_t mn, integer(p["minNodes"], "minNodes", 0, mx));
      pool.min_nodes = static_cast<int>(mn);
    }
    if (p["idleTimeout"]) {
      TY_ASSIGN_OR_RETURN(pool.idle_timeout_seconds,
                          number(p["idleTimeout"], "idleTimeout (seconds)", 0, 1e7));
    }
    if (p["priority"]) {
      TY_ASSIGN_OR_RETURN(const int64_t pr, integer(p["priority"], "priority", -1000, 1000));
      pool.priority = static_cast<int>(pr);
    }
    if (const auto l = p["labels"]) {
      if (!l.IsMap()) return error(l, "labels must be a mapping of key: value");
      for (const auto& kv : l) {
        if (!kv.second.IsScalar()) return error(kv.second, "label values must be strings");
        pool.labels[kv.first.as<std::string>()] = kv.second.Scalar();
      }
    }
    return pool;
  }

  util::Status parse(const YAML::Node& n, ServerConfig& out) {
    TY_RETURN_IF_ERROR(
        only_keys(n, "capacity",
                  {"provider", "catalog", "seed", "interruptionRatePerHour", "provisioningDelay",
                   "noticeSeconds", "zoneBackoff", "spotFallbackWait", "throughputs", "pools"}));
    CapacityConfig& c = out.capacity;
    if (const auto p = n["provider"]) {
      TY_ASSIGN_OR_RETURN(const std::string name, str(p, "capacity.provider"));
      auto provider = parse_capacity_provider(name);
      if (!provider.is_ok()) return error(p, provider.status().message());
      c.provider = *provider;
    }
    if (const auto p = n["catalog"]) {
      TY_ASSIGN_OR_RETURN(c.catalog, str(p, "capacity.catalog"));
    }
    if (const auto p = n["throughputs"]) {
      if (!p.IsScalar())
        return error(p,
                     "capacity.throughputs must be a path to Gavel's simulation_throughputs.json, "
                     "or \"\" to rank pools by price alone");
      c.throughputs = p.Scalar();
    }
    if (const auto p = n["seed"]) {
      TY_ASSIGN_OR_RETURN(const int64_t seed, integer(p, "capacity.seed", 0, INT64_MAX));
      c.seed = static_cast<uint64_t>(seed);
    }
    if (const auto p = n["interruptionRatePerHour"]) {
      TY_ASSIGN_OR_RETURN(c.interruption_rate_per_hour,
                          number(p, "capacity.interruptionRatePerHour", 0, 1e6));
    }
    auto secs = [&](const char* key, double lo, double hi) -> util::Result<util::Duration> {
      TY_ASSIGN_OR_RETURN(const double s,
                          number(n[key], fmt::format("capacity.{} (seconds)", key), lo, hi));
      return util::seconds_f(s);
    };
    if (n["provisioningDelay"]) {
      TY_ASSIGN_OR_RETURN(c.provisioning_delay, secs("provisioningDelay", 0, 86400));
    }
    if (n["noticeSeconds"]) {
      TY_ASSIGN_OR_RETURN(c.notice, secs("noticeSeconds", 0, 3600));
    }
    if (n["zoneBackoff"]) {
      TY_ASSIGN_OR_RETURN(c.zone_backoff, secs("zoneBackoff", 0, 86400 * 7));
    }
    if (n["spotFallbackWait"]) {
      TY_ASSIGN_OR_RETURN(out.policy.autoscale.spot_fallback_wait,
                          secs("spotFallbackWait", 0, 86400 * 7));
    }
    if (const auto pools = n["pools"]) {
      if (!pools.IsSequence())
        return error(pools,
                     "capacity.pools must be a list of pools like - {name: v100-spot, "
                     "kind: spot, provider: aws, instanceType: p3.2xlarge, maxNodes: 4}");
      for (const auto& p : pools) {
        TY_ASSIGN_OR_RETURN(auto parsed, pool(p));
        c.pools.push_back(std::move(parsed));
      }
    }
    return util::Status::ok();
  }

 private:
  const std::string& file_;
  std::set<std::string> names_;
};

}  // namespace

util::Result<CapacityProvider> parse_capacity_provider(const std::string& text) {
  if (text == "static") return CapacityProvider::Static;
  if (text == "simcloud") return CapacityProvider::SimCloud;
  return util::invalid_argument(
      fmt::format("unknown capacity provider '{}'; use static or simcloud", text));
}

util::Status parse_capacity_config(const std::string& file, const YAML::Node& n,
                                   ServerConfig& out) {
  return CapacityParser(file).parse(n, out);
}

}  // namespace trainyard::server
