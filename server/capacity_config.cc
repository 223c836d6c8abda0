// The server config's `capacity:` section: which provider sells nodes (static or simcloud), the
// price catalog, simcloud's knobs for live runs, and the cloud pools the autoscaler may buy.
// Errors name file:line:column, the key path and what to write instead (model/yaml_reader.h).
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "model/cloud_pool_yaml.h"
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

class CapacityParser {
 public:
  explicit CapacityParser(const YamlReader& r) : r_(r) {}

  // A cloud pool, read as the simulator's cluster file reads one (model/cloud_pool_yaml.h);
  // "local" names this machine's nodes.
  util::Result<model::Pool> pool(const YamlField& p) {
    return model::parse_cloud_pool(r_, p, names_, "'local' is this machine's");
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
  std::set<std::string> names_{"local"};
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
