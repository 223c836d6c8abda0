// The server config's `capacity:` section: which provider sells nodes (static or simcloud), the
// price catalog, simcloud's knobs for live runs, and the cloud pools the autoscaler may buy.
// Errors name file:line:column, the key path and what to write instead (model/yaml_reader.h).
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "model/yaml_reader.h"
#include "server/config.h"

namespace trainyard::server {
namespace {

using model::YamlField;
using model::YamlFields;
using model::YamlReader;

constexpr std::string_view kCapacityKeys[] = {
    "provider",          "catalog",       "seed",        "interruptionRatePerHour",
    "provisioningDelay", "noticeSeconds", "zoneBackoff", "spotFallbackWait",
    "throughputs",       "spotTrace",     "pools"};
constexpr std::string_view kPoolKeys[] = {"name",        "kind",     "provider", "instanceType",
                                          "region",      "zones",    "minNodes", "maxNodes",
                                          "idleTimeout", "priority", "labels"};

class CapacityParser {
 public:
  explicit CapacityParser(const YamlReader& r) : r_(r) {}

  util::Result<std::string> required(const YamlField& item, const YamlFields& f,
                                     std::string_view key, std::string_view fix) const {
    const YamlField* v = f.get(key);
    if (v == nullptr) return r_.missing(item, key, fix);
    return r_.non_empty_string(*v);
  }

  util::Result<model::Pool> pool(const YamlField& p) {
    TY_ASSIGN_OR_RETURN(YamlFields f, r_.fields(p, kPoolKeys));
    model::Pool pool;
    pool.autoscaled = true;
    pool.kind = model::PoolKind::OnDemand;
    TY_ASSIGN_OR_RETURN(pool.name, required(p, f, "name", "a pool needs a name"));
    if (pool.name == "local" || !names_.insert(pool.name).second)
      return r_.invalid(*f.get("name"), "a pool name not used before",
                        "pool names are unique and 'local' is this machine's");
    if (const YamlField* kind = f.get("kind")) {
      TY_ASSIGN_OR_RETURN(const std::string k, r_.non_empty_string(*kind));
      if (k == "spot") {
        pool.kind = model::PoolKind::Spot;
      } else if (k != "on-demand") {
        return r_.invalid(*kind, "spot or on-demand");
      }
    }
    TY_ASSIGN_OR_RETURN(pool.provider, required(p, f, "provider", "aws, gcp, ..."));
    TY_ASSIGN_OR_RETURN(pool.instance_type,
                        required(p, f, "instanceType", "the offering, e.g. p3.2xlarge"));
    if (const YamlField* region = f.get("region")) {
      TY_ASSIGN_OR_RETURN(pool.region, r_.non_empty_string(*region));
    }
    if (const YamlField* zones = f.get("zones")) {
      TY_ASSIGN_OR_RETURN(std::vector<YamlField> items,
                          r_.items(*zones, "zone names like [us-east-1a]"));
      for (const YamlField& zone : items) {
        TY_ASSIGN_OR_RETURN(std::string z, r_.non_empty_string(zone));
        pool.zones.push_back(std::move(z));
      }
    }
    const YamlField* max = f.get("maxNodes");
    if (max == nullptr) return r_.missing(p, "maxNodes", "the most nodes the pool may buy");
    TY_ASSIGN_OR_RETURN(const int64_t mx, r_.integer(*max, 1, 1000));
    pool.max_nodes = static_cast<int>(mx);
    if (const YamlField* min = f.get("minNodes")) {
      TY_ASSIGN_OR_RETURN(const int64_t mn, r_.integer(*min, 0, mx, "at most maxNodes"));
      pool.min_nodes = static_cast<int>(mn);
    }
    if (const YamlField* idle = f.get("idleTimeout")) {
      TY_ASSIGN_OR_RETURN(pool.idle_timeout_seconds,
                          r_.number(*idle, 0, 1e7, "a number of seconds"));
    }
    if (const YamlField* priority = f.get("priority")) {
      TY_ASSIGN_OR_RETURN(const int64_t pr, r_.integer(*priority, -1000, 1000));
      pool.priority = static_cast<int>(pr);
    }
    if (const YamlField* labels = f.get("labels")) {
      TY_ASSIGN_OR_RETURN(std::vector<YamlField> entries, r_.entries(*labels));
      for (const YamlField& e : entries) {
        TY_ASSIGN_OR_RETURN(pool.labels[e.key.Scalar()], r_.string(e));
      }
    }
    return pool;
  }

  util::Result<util::Duration> seconds(const YamlField& f, double lo, double hi) const {
    TY_ASSIGN_OR_RETURN(const double s, r_.number(f, lo, hi, "a number of seconds"));
    return util::seconds_f(s);
  }

  util::Status parse(const YamlField& section, ServerConfig& out) {
    TY_ASSIGN_OR_RETURN(YamlFields f, r_.fields(section, kCapacityKeys));
    CapacityConfig& c = out.capacity;
    if (const YamlField* p = f.get("provider")) {
      TY_ASSIGN_OR_RETURN(const std::string name, r_.non_empty_string(*p));
      auto provider = parse_capacity_provider(name);
      if (!provider.is_ok()) return r_.invalid(*p, "static or simcloud");
      c.provider = *provider;
    }
    if (const YamlField* p = f.get("catalog")) {
      TY_ASSIGN_OR_RETURN(c.catalog, r_.non_empty_string(*p));
    }
    if (const YamlField* p = f.get("throughputs")) {
      if (!p->value.IsScalar())
        return r_.invalid(*p, "a path to Gavel's simulation_throughputs.json",
                          "or \"\" to rank pools by price alone");
      TY_ASSIGN_OR_RETURN(c.throughputs, r_.string(*p));
    }
    if (const YamlField* p = f.get("spotTrace")) {
      TY_ASSIGN_OR_RETURN(c.spot_trace, r_.non_empty_string(*p));
    }
    if (const YamlField* p = f.get("seed")) {
      TY_ASSIGN_OR_RETURN(const int64_t seed, r_.integer(*p, 0, INT64_MAX));
      c.seed = static_cast<uint64_t>(seed);
    }
    if (const YamlField* p = f.get("interruptionRatePerHour")) {
      TY_ASSIGN_OR_RETURN(c.interruption_rate_per_hour, r_.number(*p, 0, 1e6));
    }
    if (const YamlField* p = f.get("provisioningDelay")) {
      TY_ASSIGN_OR_RETURN(c.provisioning_delay, seconds(*p, 0, 86400));
    }
    if (const YamlField* p = f.get("noticeSeconds")) {
      TY_ASSIGN_OR_RETURN(c.notice, seconds(*p, 0, 3600));
    }
    if (const YamlField* p = f.get("zoneBackoff")) {
      TY_ASSIGN_OR_RETURN(c.zone_backoff, seconds(*p, 0, 86400 * 7));
    }
    if (const YamlField* p = f.get("spotFallbackWait")) {
      TY_ASSIGN_OR_RETURN(out.policy.autoscale.spot_fallback_wait, seconds(*p, 0, 86400 * 7));
    }
    if (const YamlField* pools = f.get("pools")) {
      TY_ASSIGN_OR_RETURN(std::vector<YamlField> items,
                          r_.items(*pools,
                                   "pools like - {name: v100-spot, kind: spot, provider: aws, "
                                   "instanceType: p3.2xlarge, maxNodes: 4}"));
      for (const YamlField& item : items) {
        TY_ASSIGN_OR_RETURN(auto parsed, pool(item));
        c.pools.push_back(std::move(parsed));
      }
    }
    return util::Status::ok();
  }

 private:
  const YamlReader& r_;
  std::set<std::string> names_;
};

}  // namespace

util::Result<CapacityProvider> parse_capacity_provider(const std::string& text) {
  if (text == "static") return CapacityProvider::Static;
  if (text == "simcloud") return CapacityProvider::SimCloud;
  return util::invalid_argument(
      fmt::format("unknown capacity provider '{}'; use static or simcloud", text));
}

util::Status parse_capacity_config(const YamlReader& r, const YamlField& section,
                                   ServerConfig& out) {
  return CapacityParser(r).parse(section, out);
}

}  // namespace trainyard::server
