#include "server/fleet.h"

#include <filesystem>

#include <fmt/format.h>

#include "cloud/catalog.h"
#include "cloud/simcloud.h"
#include "cloud/spot_advisor.h"
#include "cloud/spot_trace.h"
#include "model/accelerator.h"
#include "util/log.h"

namespace trainyard::server {
namespace {

cloud::SimCloudOptions simcloud_options(const CapacityConfig& c) {
  cloud::SimCloudOptions o;
  o.seed = c.seed;
  o.default_provisioning_delay = c.provisioning_delay;
  o.provisioning_delay.clear();
  if (c.notice) {
    for (auto& [provider, lead] : o.notice_lead) lead = *c.notice;
    for (const auto& p : c.pools) o.notice_lead[p.provider] = *c.notice;
  }
  if (c.interruption_rate_per_hour) {
    // An exact rate: every offering falls back to one bucket (the advisor is left empty), and
    // the scale turns that bucket's rate into the one asked for.
    o.default_interruption_bucket = 1;
    o.interruption_rate_scale =
        *c.interruption_rate_per_hour / cloud::interruption_rate_per_hour(1);
  }
  return o;
}

}  // namespace

util::Result<std::unique_ptr<Fleet>> Fleet::open(const CapacityConfig& config,
                                                 const util::Clock& clock) {
  TY_ASSIGN_OR_RETURN(auto catalog, cloud::load_catalog(config.catalog));
  if (catalog.offerings.empty())
    return util::invalid_argument(fmt::format(
        "capacity.catalog: no offerings in {}; point it at a folder of <provider>_*.csv price "
        "catalogs (the repository's ../shared/catalog)",
        config.catalog));
  std::optional<cloud::ThroughputTable> throughputs;
  const std::string table = config.throughputs.value_or(std::string(kDefaultThroughputs));
  if (!table.empty() && (config.throughputs || std::filesystem::exists(table))) {
    auto loaded = cloud::ThroughputTable::load_gavel(table);
    if (!loaded.is_ok())
      return util::invalid_argument("capacity.throughputs: " + loaded.status().message());
    throughputs = std::move(*loaded);
  }
  TY_ASSIGN_OR_RETURN(auto pools, resolve_pools(config.pools, catalog.offerings,
                                                throughputs ? &*throughputs : nullptr));
  cloud::SpotAdvisor advisor;
  const auto advisor_path = std::filesystem::path(config.catalog) / "aws_spot_advisor_gpu.csv";
  if (!config.interruption_rate_per_hour && std::filesystem::exists(advisor_path)) {
    TY_ASSIGN_OR_RETURN(advisor, cloud::load_spot_advisor(advisor_path.string()));
  }
  cloud::SimCloudOptions options = simcloud_options(config);
  if (!config.spot_trace.empty()) {
    auto trace = cloud::load_spot_trace(config.spot_trace);
    if (!trace.is_ok())
      return util::invalid_argument("capacity.spotTrace: " + trace.status().message());
    options.replay = cloud::SpotReplay{.every_offering = std::move(*trace)};
  }
  auto provider = cloud::make_simcloud(std::move(catalog.offerings), std::move(advisor),
                                       std::move(options), clock);
  return std::make_unique<Fleet>(config, std::move(pools), std::move(provider), clock);
}

Fleet::Fleet(const CapacityConfig& config, std::vector<FleetPool> pools,
             cloud::ProviderPtr provider, const util::Clock& clock)
    : drive::Fleet(std::move(pools), std::move(provider), clock,
                   {.zone_backoff = config.zone_backoff,
                    .refusal_backoff = config.spot_unavailable_backoff}),
      notice_(config.notice) {}

std::vector<std::string> Fleet::scale_up(const sched::ScaleUpAction& action) {
  auto names = drive::Fleet::scale_up(action);
  if (names.is_ok()) return std::move(*names);
  TY_LOG_WARN("fleet: pool {}: cannot request a node: {}", pools()[action.pool].pool.name,
              names.status().message());
  return {};
}

util::Status Fleet::force_interruption(const std::string& node) {
  const FleetNode* n = find(node);
  if (n == nullptr) return util::not_found(fmt::format("node {} is not in the fleet", node));
  util::Duration lead{0};
  if (notice_) {
    lead = *notice_;
  } else {
    const cloud::SimCloudOptions defaults;
    auto it = defaults.notice_lead.find(pools()[n->pool].pool.provider);
    if (it != defaults.notice_lead.end()) lead = it->second;
  }
  return drive::Fleet::force_interruption(node, lead);
}

LocalNode Fleet::local_node(const FleetNode& n, util::NodeId id) const {
  const FleetPool& fp = pools()[n.pool];
  const model::Accelerator* acc = model::find_accelerator(fp.pool.gpu_model);
  LocalNode out{.node = node_spec(n),
                .simulated = true,
                .zone = n.zone >= 0 ? fp.zones[n.zone].name : "",
                .price_per_hour = n.price_per_hour,
                .cloud = true,
                .slot = n.slot};
  out.node.id = id;
  out.node.labels[model::kLabelPool] = fp.pool.name;
  const std::string model_name = acc != nullptr ? std::string(acc->name) : fp.pool.gpu_model;
  for (int i = 0; i < fp.pool.gpus_per_node; ++i) {
    out.gpus.push_back({.index = i,
                        .uuid = fmt::format("GPU-sim-{}-{}", n.name, i),
                        .name = "Simulated " + model_name,
                        .model = model_name,
                        .memory = acc != nullptr ? acc->memory : model::Bytes(0),
                        .simulated = true});
  }
  return out;
}

}  // namespace trainyard::server
