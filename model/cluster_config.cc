#include "model/cluster_config.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/cloud_pool_yaml.h"
#include "model/names.h"
#include "model/quantity.h"
#include "model/yaml_reader.h"
#include "util/read_file.h"

namespace trainyard::model {
namespace {

// Most nodes a cluster file may describe: far above real clusters (Philly ~550 servers, the
// Alibaba openb trace 1,523 nodes), low enough that a typo ("nodes: 1000000" in several pools)
// is an error instead of gigabytes of nodes.
constexpr int64_t kMaxClusterNodes = 100'000;

// Keys of a pool of alike nodes, of a node, of a team (a cloud pool's: model/cloud_pool_yaml.cc).
constexpr std::string_view kPoolKeys[] = {
    "name", "kind",         "gpu",    "gpusPerNode",      "nodes",   "cpu", "memory",
    "mig",  "nodesPerRack", "labels", "pricePerNodeHour", "minNodes"};
constexpr std::string_view kNodeKeys[] = {"name", "gpu",  "gpus",   "cpu", "memory",
                                          "mig",  "rack", "labels", "pool"};
constexpr std::string_view kTeamKeys[] = {"name",  "weight",         "cohort",
                                          "quota", "borrowingLimit", "budget"};
// Prices, weights and GPU amounts: far above any real value, below where doubles lose cents.
constexpr double kMaxAmount = 1e12;

class Parser {
 public:
  Parser(const YamlReader& r, ClusterParseOptions options) : r_(r), options_(std::move(options)) {}

  util::Result<model::Labels> labels(const YamlField& f) const {
    TY_ASSIGN_OR_RETURN(std::vector<YamlField> entries, r_.entries(f));
    model::Labels out;
    for (const YamlField& e : entries) {
      TY_ASSIGN_OR_RETURN(out[e.key.Scalar()], r_.string(e));
    }
    return out;
  }

  util::Result<std::string> gpu_model(const YamlField& f) const {
    TY_ASSIGN_OR_RETURN(std::string name, r_.string(f));
    if (name.empty()) return r_.invalid(f, "an accelerator model", "e.g. H100-80GB");
    return model::canonical_accelerator_name(name);
  }

  util::Status room_for_nodes(const YamlField& at, const ClusterConfig& out, int64_t more) const {
    const int64_t total = static_cast<int64_t>(out.nodes.size()) + more;
    if (total <= kMaxClusterNodes) return util::Status::ok();
    return r_.error(at, fmt::format("{}: the cluster would have {} nodes; at most {} are supported",
                                    at.path, total, kMaxClusterNodes));
  }

  // A unique pool or node name.
  util::Result<std::string> unique_name(const YamlField& item, const YamlFields& f,
                                        std::string_view what) {
    const YamlField* name = f.get("name");
    if (name == nullptr) return r_.missing(item, "name", fmt::format("a {} needs a name", what));
    TY_ASSIGN_OR_RETURN(std::string out, r_.string(*name));
    if (!names_.insert(out).second)
      return r_.error(*name, fmt::format("{}: '{}' is defined twice", name->path, out));
    return out;
  }

  // Node fields shared by pools and explicit nodes.
  util::Status node_fields(const YamlFields& f, model::Node& node) const {
    if (const YamlField* cpu = f.get("cpu")) {
      TY_ASSIGN_OR_RETURN(std::string text, r_.string(*cpu));
      auto parsed = model::parse_cpu(text);
      if (!parsed.is_ok())
        return r_.error(*cpu, fmt::format("{}: {}", cpu->path, parsed.status().message()));
      node.cpu = *parsed;
    }
    if (const YamlField* mem = f.get("memory")) {
      TY_ASSIGN_OR_RETURN(std::string text, r_.string(*mem));
      auto parsed = model::parse_bytes(text);
      if (!parsed.is_ok())
        return r_.error(*mem, fmt::format("{}: {}", mem->path, parsed.status().message()));
      node.memory = *parsed;
    }
    if (const YamlField* mig = f.get("mig")) {
      TY_ASSIGN_OR_RETURN(node.mig_enabled, r_.boolean(*mig));
      const model::Accelerator* a = model::find_accelerator(node.gpu_model);
      if (node.mig_enabled && (a == nullptr || a->mig_profiles.empty())) {
        return r_.error(*mig, fmt::format("{}: {} has no MIG support; MIG needs A100, H100 or H200",
                                          mig->path, node.gpu_model));
      }
    }
    if (const YamlField* l = f.get("labels")) {
      TY_ASSIGN_OR_RETURN(node.labels, labels(*l));
    }
    return util::Status::ok();
  }

  util::Result<model::PoolKind> pool_kind(const YamlField& f) const {
    TY_ASSIGN_OR_RETURN(std::string kind, r_.string(f));
    auto k = model::parse_pool_kind(kind);
    if (!k.is_ok()) return r_.error(f, fmt::format("{}: {}", f.path, k.status().message()));
    return *k;
  }

  // A pool bought from a cloud: no nodes up front; read as the server reads its
  // capacity.pools (model/cloud_pool_yaml.h). Its most nodes count toward the cluster's limit.
  util::Status cloud_pool(const YamlField& p, ClusterConfig& out) {
    TY_ASSIGN_OR_RETURN(model::Pool pool, model::parse_cloud_pool(r_, p, names_));
    TY_RETURN_IF_ERROR(room_for_nodes(p, out, pool.max_nodes));
    out.pools.push_back(std::move(pool));
    return util::Status::ok();
  }

  util::Status pool(const YamlField& p, ClusterConfig& out) {
    if (p.value.IsMap() && p.value["instanceType"]) return cloud_pool(p, out);
    TY_ASSIGN_OR_RETURN(YamlFields f, r_.fields(p, kPoolKeys));
    model::Pool pool;
    TY_ASSIGN_OR_RETURN(pool.name, unique_name(p, f, "pool"));
    if (const YamlField* kind = f.get("kind")) {
      TY_ASSIGN_OR_RETURN(pool.kind, pool_kind(*kind));
    }
    const YamlField* nodes = f.get("nodes");
    if (nodes == nullptr) return r_.missing(p, "nodes", "how many nodes the pool has");
    TY_ASSIGN_OR_RETURN(const int64_t count, r_.integer(*nodes, 0, kMaxClusterNodes));
    TY_RETURN_IF_ERROR(room_for_nodes(*nodes, out, count));
    pool.max_nodes = static_cast<int>(count);
    pool.min_nodes = pool.max_nodes;
    if (const YamlField* min = f.get("minNodes")) {
      TY_ASSIGN_OR_RETURN(const int64_t mn, r_.integer(*min, 0, count, "at most nodes"));
      pool.min_nodes = static_cast<int>(mn);
    }
    model::Node tmpl;
    tmpl.pool = pool.name;
    tmpl.cpu = model::CpuMilli(64000);
    tmpl.memory = model::gib(512);
    const YamlField* gpu = f.get("gpu");
    const YamlField* per_node = f.get("gpusPerNode");
    if (gpu != nullptr) {
      TY_ASSIGN_OR_RETURN(tmpl.gpu_model, gpu_model(*gpu));
      if (per_node == nullptr) return r_.missing(p, "gpusPerNode", "it goes with gpu:");
    }
    if (per_node != nullptr) {
      if (gpu == nullptr) return r_.missing(p, "gpu", "gpusPerNode needs the GPU model");
      TY_ASSIGN_OR_RETURN(const int64_t g, r_.integer(*per_node, 0, model::kMaxGpusPerNode));
      tmpl.gpu_count = static_cast<int>(g);
    }
    pool.gpu_model = tmpl.gpu_model;
    pool.gpus_per_node = tmpl.gpu_count;
    TY_RETURN_IF_ERROR(node_fields(f, tmpl));
    pool.cpu = tmpl.cpu;
    pool.memory = tmpl.memory;
    pool.mig_enabled = tmpl.mig_enabled;
    pool.labels = tmpl.labels;
    int64_t per_rack = 0;
    if (const YamlField* rack = f.get("nodesPerRack")) {
      TY_ASSIGN_OR_RETURN(per_rack, r_.integer(*rack, 1, 1000000));
    }
    if (const YamlField* price = f.get("pricePerNodeHour")) {
      TY_ASSIGN_OR_RETURN(pool.price_per_node_hour, r_.number(*price, 0, kMaxAmount));
    }
    for (int64_t i = 0; i < count; ++i) {
      model::Node n = tmpl;
      n.name = fmt::format("{}-{}", pool.name, i);
      if (per_rack > 0) n.rack = fmt::format("{}-rack{}", pool.name, i / per_rack);
      out.nodes.push_back(std::move(n));
    }
    out.pools.push_back(std::move(pool));
    return util::Status::ok();
  }

  util::Status node(const YamlField& n, ClusterConfig& out) {
    TY_RETURN_IF_ERROR(room_for_nodes(n, out, 1));
    TY_ASSIGN_OR_RETURN(YamlFields f, r_.fields(n, kNodeKeys));
    model::Node node;
    TY_ASSIGN_OR_RETURN(node.name, unique_name(n, f, "node"));
    node.cpu = model::CpuMilli(64000);
    node.memory = model::gib(512);
    const YamlField* gpus = f.get("gpus");
    if (const YamlField* gpu = f.get("gpu")) {
      TY_ASSIGN_OR_RETURN(node.gpu_model, gpu_model(*gpu));
      if (gpus == nullptr) return r_.missing(n, "gpus", "how many GPUs of that model");
      TY_ASSIGN_OR_RETURN(const int64_t g, r_.integer(*gpus, 0, model::kMaxGpusPerNode));
      node.gpu_count = static_cast<int>(g);
    } else if (gpus != nullptr) {
      return r_.missing(n, "gpu", "gpus needs the GPU model on the same node");
    }
    if (const YamlField* rack = f.get("rack")) {
      TY_ASSIGN_OR_RETURN(node.rack, r_.string(*rack));
    }
    if (const YamlField* pool = f.get("pool")) {
      TY_ASSIGN_OR_RETURN(node.pool, r_.string(*pool));
    }
    TY_RETURN_IF_ERROR(node_fields(f, node));
    out.nodes.push_back(std::move(node));
    return util::Status::ok();
  }

  util::Result<std::map<std::string, model::GpuMilli>> gpu_amounts(const YamlField& f) const {
    TY_ASSIGN_OR_RETURN(
        std::vector<YamlField> entries,
        r_.entries(f, "a mapping of GPU model (or \"*\" for all) to GPUs, e.g. {H100-80GB: 8}"));
    std::map<std::string, model::GpuMilli> out;
    for (const YamlField& e : entries) {
      const std::string& key = e.key.Scalar();
      TY_ASSIGN_OR_RETURN(const double gpus, r_.number(e, 0, kMaxAmount));
      out[key == model::kAnyGpuModel ? key : model::canonical_accelerator_name(key)] =
          model::GpuMilli(static_cast<int64_t>(gpus * model::kMilliPerGpu + 0.5));
    }
    return out;
  }

  // budget: {usd: 500, period: month}
  util::Status budget(const YamlField& b, model::Team& team) const {
    TY_ASSIGN_OR_RETURN(YamlFields f, r_.fields(b, {"usd", "period"}));
    const YamlField* usd = f.get("usd");
    if (usd == nullptr) return r_.missing(b, "usd", "the amount per period");
    TY_ASSIGN_OR_RETURN(team.budget_usd, r_.number(*usd, 0, kMaxAmount));
    if (team.budget_usd <= 0) return r_.invalid(*usd, "an amount > 0");
    if (const YamlField* period = f.get("period")) {
      TY_ASSIGN_OR_RETURN(std::string text, r_.string(*period));
      if (text == "day") {
        team.budget_period = model::Team::BudgetPeriod::Day;
      } else if (text == "month") {
        team.budget_period = model::Team::BudgetPeriod::Month;
      } else {
        return r_.invalid(*period, "day or month");
      }
    }
    return util::Status::ok();
  }

  util::Status team(const YamlField& t, ClusterConfig& out) {
    TY_ASSIGN_OR_RETURN(YamlFields f, r_.fields(t, kTeamKeys));
    model::Team team;
    const YamlField* name = f.get("name");
    if (name == nullptr) return r_.missing(t, "name", "a team needs a name");
    TY_ASSIGN_OR_RETURN(team.name, r_.string(*name));
    // The same rule as spec.team and API tokens, so every configured team can own jobs.
    if (auto st = check_team_name(team.name); !st.is_ok())
      return r_.error(*name, fmt::format("{}: {}", name->path, st.message()));
    for (const auto& other : out.teams) {
      if (other.name == team.name)
        return r_.error(*name,
                        fmt::format("{}: team '{}' is defined twice", name->path, team.name));
    }
    if (const YamlField* weight = f.get("weight")) {
      TY_ASSIGN_OR_RETURN(team.weight, r_.number(*weight, 0, kMaxAmount));
      if (team.weight <= 0) return r_.invalid(*weight, "a weight > 0");
    }
    if (const YamlField* cohort = f.get("cohort")) {
      TY_ASSIGN_OR_RETURN(team.cohort, r_.string(*cohort));
    }
    if (const YamlField* quota = f.get("quota")) {
      TY_ASSIGN_OR_RETURN(auto amounts, gpu_amounts(*quota));
      for (const auto& [k, v] : amounts) team.quotas[k] = {v, model::GpuMilli(-1)};
    }
    if (const YamlField* borrowing = f.get("borrowingLimit")) {
      TY_ASSIGN_OR_RETURN(auto limits, gpu_amounts(*borrowing));
      for (const auto& [k, v] : limits) {
        auto it = team.quotas.find(k);
        if (it == team.quotas.end()) {
          return r_.error(*borrowing, fmt::format("{}: the limit for '{}' needs a quota for '{}' "
                                                  "too",
                                                  borrowing->path, k, k));
        }
        it->second.borrowing_limit = v;
      }
    }
    if (const YamlField* b = f.get("budget")) TY_RETURN_IF_ERROR(budget(*b, team));
    out.teams.push_back(std::move(team));
    return util::Status::ok();
  }

  util::Result<YamlFields> root_fields(const YamlField& root) const {
    std::vector<std::string_view> allowed = {"name", "teams"};
    if (options_.allow_nodes) allowed.insert(allowed.end(), {"pools", "nodes"});
    for (const std::string& k : options_.extra_root_keys) allowed.emplace_back(k);
    TY_ASSIGN_OR_RETURN(std::vector<YamlField> entries, r_.entries(root));
    for (const YamlField& e : entries) {
      const std::string& key = e.key.Scalar();
      if (!options_.allow_nodes && (key == "pools" || key == "nodes")) {
        return r_.error_at(e.key, fmt::format("'{}' is not allowed here: the nodes are this "
                                              "machine's GPUs (see --gpus)",
                                              key));
      }
    }
    return r_.fields(root, allowed);
  }

  util::Result<ClusterConfig> parse(const YamlField& root) {
    TY_ASSIGN_OR_RETURN(YamlFields f, root_fields(root));
    ClusterConfig out;
    if (const YamlField* name = f.get("name")) {
      TY_ASSIGN_OR_RETURN(out.name, r_.string(*name));
    }
    for (std::string_view section : {"pools", "nodes", "teams"}) {
      const YamlField* list = f.get(section);
      if (list == nullptr || (!options_.allow_nodes && section != "teams")) continue;
      TY_ASSIGN_OR_RETURN(std::vector<YamlField> items, r_.items(*list, "items start with '- '"));
      for (const YamlField& item : items) {
        if (section == "pools") {
          TY_RETURN_IF_ERROR(pool(item, out));
        } else if (section == "nodes") {
          TY_RETURN_IF_ERROR(node(item, out));
        } else {
          TY_RETURN_IF_ERROR(team(item, out));
        }
      }
    }
    const bool cloud = std::any_of(out.pools.begin(), out.pools.end(),
                                   [](const model::Pool& p) { return p.autoscaled; });
    if (out.nodes.empty() && options_.require_nodes && !cloud)
      return r_.error(root,
                      "the cluster has no nodes; add a pool with nodes: <count> or a nodes: list");
    int64_t id = 1;
    for (auto& n : out.nodes) n.id = util::NodeId(id++);
    return out;
  }

 private:
  const YamlReader& r_;
  ClusterParseOptions options_;
  std::set<std::string> names_;
};

}  // namespace

int64_t ClusterConfig::total_gpus() const {
  int64_t g = 0;
  for (const auto& n : nodes) g += n.gpu_count;
  return g;
}

util::Result<ClusterConfig> parse_cluster_yaml(const std::string& text, const std::string& file,
                                               const ClusterParseOptions& options) {
  const YamlReader r(file);
  TY_ASSIGN_OR_RETURN(const YamlField root,
                      r.load_mapping(text, "a mapping with pools:, nodes: and teams:"));
  return parse_cluster_root(r, root, options);
}

util::Result<ClusterConfig> parse_cluster_root(const YamlReader& r, const YamlField& root,
                                               const ClusterParseOptions& options) {
  return Parser(r, options).parse(root);
}

util::Result<ClusterConfig> load_cluster_yaml(const std::string& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path, {.what = "the cluster file"}));
  return parse_cluster_yaml(text, path);
}

}  // namespace trainyard::model
