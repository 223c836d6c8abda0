#include "model/cloud_pool_yaml.h"

#include <fmt/format.h>

namespace trainyard::model {
namespace {

constexpr std::string_view kCloudPoolKeys[] = {
    "name",     "kind",     "provider",    "instanceType", "region", "zones",
    "minNodes", "maxNodes", "idleTimeout", "priority",     "labels"};
// Longest idle timeout: 115 days, far above any sensible one, below where a typo is likely.
constexpr double kMaxIdleTimeoutSeconds = 1e7;

class CloudPoolParser {
 public:
  CloudPoolParser(const YamlReader& r, const YamlField& item, const YamlFields& f)
      : r_(r), item_(item), f_(f) {}

  util::Result<std::string> required(std::string_view key, std::string_view fix) const {
    const YamlField* v = f_.get(key);
    if (v == nullptr) return r_.missing(item_, key, fix);
    return r_.non_empty_string(*v);
  }

  util::Status name(Pool& pool, std::set<std::string>& taken, std::string_view hint) const {
    TY_ASSIGN_OR_RETURN(pool.name, required("name", "a pool needs a name"));
    if (!taken.insert(pool.name).second) {
      const YamlField& at = *f_.get("name");
      return r_.error(at, fmt::format("{}: '{}' is already used; pool and node names are "
                                      "unique{}{}",
                                      at.path, pool.name, hint.empty() ? "" : ", and ", hint));
    }
    return util::Status::ok();
  }

  util::Status offering(Pool& pool) const {
    pool.kind = PoolKind::OnDemand;
    if (const YamlField* kind = f_.get("kind")) {
      TY_ASSIGN_OR_RETURN(const std::string k, r_.non_empty_string(*kind));
      auto parsed = parse_pool_kind(k);
      if (!parsed.is_ok() || (*parsed != PoolKind::Spot && *parsed != PoolKind::OnDemand))
        return r_.invalid(*kind, "spot or on-demand", "a cloud pool (instanceType:) buys nodes");
      pool.kind = *parsed;
    }
    TY_ASSIGN_OR_RETURN(pool.provider, required("provider", "aws, gcp, ..."));
    TY_ASSIGN_OR_RETURN(pool.instance_type,
                        required("instanceType", "the offering, e.g. p3.2xlarge"));
    if (const YamlField* region = f_.get("region")) {
      TY_ASSIGN_OR_RETURN(pool.region, r_.non_empty_string(*region));
    }
    if (const YamlField* zones = f_.get("zones")) {
      TY_ASSIGN_OR_RETURN(std::vector<YamlField> items,
                          r_.items(*zones, "zone names like [us-east-1a]"));
      for (const YamlField& zone : items) {
        TY_ASSIGN_OR_RETURN(std::string z, r_.non_empty_string(zone));
        pool.zones.push_back(std::move(z));
      }
    }
    return util::Status::ok();
  }

  util::Status scaling(Pool& pool) const {
    const YamlField* max = f_.get("maxNodes");
    if (max == nullptr) return r_.missing(item_, "maxNodes", "the most nodes the pool may buy");
    TY_ASSIGN_OR_RETURN(const int64_t mx, r_.integer(*max, 1, kMaxCloudPoolNodes));
    pool.max_nodes = static_cast<int>(mx);
    if (const YamlField* min = f_.get("minNodes")) {
      TY_ASSIGN_OR_RETURN(const int64_t mn, r_.integer(*min, 0, mx, "at most maxNodes"));
      pool.min_nodes = static_cast<int>(mn);
    }
    if (const YamlField* idle = f_.get("idleTimeout")) {
      TY_ASSIGN_OR_RETURN(pool.idle_timeout_seconds,
                          r_.number(*idle, 0, kMaxIdleTimeoutSeconds, "a number of seconds"));
    }
    if (const YamlField* priority = f_.get("priority")) {
      TY_ASSIGN_OR_RETURN(const int64_t pr, r_.integer(*priority, -1000, 1000));
      pool.priority = static_cast<int>(pr);
    }
    if (const YamlField* labels = f_.get("labels")) {
      TY_ASSIGN_OR_RETURN(std::vector<YamlField> entries, r_.entries(*labels));
      for (const YamlField& e : entries) {
        TY_ASSIGN_OR_RETURN(pool.labels[e.key.Scalar()], r_.string(e));
      }
    }
    return util::Status::ok();
  }

 private:
  const YamlReader& r_;
  const YamlField& item_;
  const YamlFields& f_;
};

}  // namespace

util::Result<Pool> parse_cloud_pool(const YamlReader& r, const YamlField& item,
                                    std::set<std::string>& taken, std::string_view reserved_hint) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(item, kCloudPoolKeys));
  const CloudPoolParser p(r, item, f);
  Pool pool;
  pool.autoscaled = true;
  TY_RETURN_IF_ERROR(p.name(pool, taken, reserved_hint));
  TY_RETURN_IF_ERROR(p.offering(pool));
  TY_RETURN_IF_ERROR(p.scaling(pool));
  return pool;
}

}  // namespace trainyard::model
