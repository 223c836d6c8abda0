#include "model/cluster_config.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "model/accelerator.h"
#include "model/names.h"
#include "model/quantity.h"
#include "util/read_file.h"

namespace trainyard::model {
namespace {

// Most nodes a cluster file may describe: far above real clusters (Philly ~550 servers, the
// Alibaba openb trace 1,523 nodes), low enough that a typo ("nodes: 1000000" in several pools)
// is an error instead of gigabytes of nodes.
constexpr int64_t kMaxClusterNodes = 100'000;

class Parser {
 public:
  Parser(std::string file, ClusterParseOptions options)
      : file_(std::move(file)), options_(std::move(options)) {}

  util::Status error(const YAML::Node& n, std::string_view msg) const {
    const auto m = n.Mark();
    if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file_, msg));
    return util::invalid_argument(
        fmt::format("{}:{}:{}: {}", file_, m.line + 1, m.column + 1, msg));
  }

  util::Status only_keys(const YAML::Node& map, std::string_view where,
                         std::initializer_list<std::string_view> allowed) const {
    if (!map.IsMap()) return error(map, fmt::format("{} must be a mapping of key: value", where));
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      bool ok = false;
      for (auto a : allowed) ok = ok || key == a;
      if (!ok) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return error(kv.first,
                     fmt::format("unknown key '{}' in {}; allowed: {}", key, where, list));
      }
    }
    return util::Status::ok();
  }

  util::Result<std::string> str(const YAML::Node& n, std::string_view what) const {
    if (!n.IsScalar()) return error(n, fmt::format("{} must be a string", what));
    return n.as<std::string>();
  }

  util::Result<int64_t> integer(const YAML::Node& n, std::string_view what, int64_t lo,
                                int64_t hi) const {
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v) || v < lo || v > hi) {
      return error(n, fmt::format("{} must be a whole number in {}..{}, got '{}'", what, lo, hi,
                                  n.IsScalar() ? n.Scalar() : std::string("(not a scalar)")));
    }
    return v;
  }

  util::Result<double> number(const YAML::Node& n, std::string_view what, double lo) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= lo) || v > 1e12) {
      return error(n, fmt::format("{} must be a number >= {}, got '{}'", what, lo,
                                  n.IsScalar() ? n.Scalar() : std::string("(not a scalar)")));
    }
    return v;
  }

  util::Result<bool> boolean(const YAML::Node& n, std::string_view what) const {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      return error(n, fmt::format("{} must be true or false", what));
    }
    return v;
  }

  util::Result<model::Labels> labels(const YAML::Node& n) const {
    if (!n.IsMap()) return error(n, "labels must be a mapping of key: value");
    model::Labels out;
    for (const auto& kv : n) {
      if (!kv.second.IsScalar()) return error(kv.second, "label values must be strings");
      out[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    return out;
  }

  util::Result<std::string> gpu_model(const YAML::Node& n) const {
    TY_ASSIGN_OR_RETURN(std::string name, str(n, "gpu"));
    if (name.empty()) return error(n, "gpu must name an accelerator model, e.g. H100-80GB");
    return model::canonical_accelerator_name(name);
  }

  util::Status room_for_nodes(const YAML::Node& at, const ClusterConfig& out, int64_t more) const {
    const int64_t total = static_cast<int64_t>(out.nodes.size()) + more;
    if (total <= kMaxClusterNodes) return util::Status::ok();
    return error(at, fmt::format("the cluster would have {} nodes; at most {} are supported", total,
                                 kMaxClusterNodes));
  }

  // Node fields shared by pools and explicit nodes.
  util::Status node_fields(const YAML::Node& n, model::Node& node) const {
    if (n["cpu"]) {
      TY_ASSIGN_OR_RETURN(std::string cpu, str(n["cpu"], "cpu"));
      auto parsed = model::parse_cpu(cpu);
      if (!parsed.is_ok()) return error(n["cpu"], parsed.status().message());
      node.cpu = *parsed;
    }
    if (n["memory"]) {
      TY_ASSIGN_OR_RETURN(std::string mem, str(n["memory"], "memory"));
      auto parsed = model::parse_bytes(mem);
      if (!parsed.is_ok()) return error(n["memory"], parsed.status().message());
      node.memory = *parsed;
    }
    if (n["mig"]) {
      TY_ASSIGN_OR_RETURN(node.mig_enabled, boolean(n["mig"], "mig"));
      const model::Accelerator* a = model::find_accelerator(node.gpu_model);
      if (node.mig_enabled && (a == nullptr || a->mig_profiles.empty())) {
        return error(n["mig"], fmt::format("{} has no MIG support; MIG needs A100, H100 or H200",
                                           node.gpu_model));
      }
    }
    if (n["labels"]) {
      TY_ASSIGN_OR_RETURN(node.labels, labels(n["labels"]));
    }
    return util::Status::ok();
  }

  // A pool bought from a cloud: no nodes up front; the shape and price come from the catalog
  // offering the driver resolves (cloud/pool_offerings.h).
  util::Status cloud_pool(const YAML::Node& p, ClusterConfig& out) {
    TY_RETURN_IF_ERROR(only_keys(p, "a cloud pool",
                                 {"name", "kind", "provider", "instanceType", "region", "zones",
                                  "minNodes", "maxNodes", "idleTimeout", "priority", "labels"}));
    if (!p["name"]) return error(p, "a pool needs a name");
    model::Pool pool;
    TY_ASSIGN_OR_RETURN(pool.name, str(p["name"], "name"));
    if (!names_.insert(pool.name).second)
      return error(p["name"], fmt::format("pool '{}' is defined twice", pool.name));
    pool.kind = model::PoolKind::OnDemand;
    if (p["kind"]) {
      TY_ASSIGN_OR_RETURN(std::string kind, str(p["kind"], "kind"));
      auto k = model::parse_pool_kind(kind);
      if (!k.is_ok()) return error(p["kind"], k.status().message());
      if (*k != model::PoolKind::Spot && *k != model::PoolKind::OnDemand)
        return error(p["kind"], "a cloud pool (instanceType:) buys spot or on-demand nodes");
      pool.kind = *k;
    }
    if (!p["provider"])
      return error(p, fmt::format("pool '{}' needs provider: (aws, gcp, ...)", pool.name));
    TY_ASSIGN_OR_RETURN(pool.provider, str(p["provider"], "provider"));
    TY_ASSIGN_OR_RETURN(pool.instance_type, str(p["instanceType"], "instanceType"));
    if (p["region"]) {
      TY_ASSIGN_OR_RETURN(pool.region, str(p["region"], "region"));
    }
    if (p["zones"]) {
      if (!p["zones"].IsSequence()) return error(p["zones"], "zones must be a list of zone names");
      for (const auto& z : p["zones"]) {
        TY_ASSIGN_OR_RETURN(std::string zone, str(z, "zones"));
        pool.zones.push_back(std::move(zone));
      }
    }
    if (!p["maxNodes"])
      return error(p, fmt::format("pool '{}' needs maxNodes: <count>", pool.name));
    TY_ASSIGN_OR_RETURN(const int64_t mx, integer(p["maxNodes"], "maxNodes", 1, kMaxClusterNodes));
    TY_RETURN_IF_ERROR(room_for_nodes(p["maxNodes"], out, mx));
    pool.max_nodes = static_cast<int>(mx);
    if (p["minNodes"]) {
      TY_ASSIGN_OR_RETURN(const int64_t mn, integer(p["minNodes"], "minNodes", 0, mx));
      pool.min_nodes = static_cast<int>(mn);
    }
    if (p["idleTimeout"]) {
      TY_ASSIGN_OR_RETURN(pool.idle_timeout_seconds,
                          number(p["idleTimeout"], "idleTimeout (seconds)", 0));
    }
    if (p["priority"]) {
      TY_ASSIGN_OR_RETURN(const int64_t pr, integer(p["priority"], "priority", -1000, 1000));
      pool.priority = static_cast<int>(pr);
    }
    if (p["labels"]) {
      TY_ASSIGN_OR_RETURN(pool.labels, labels(p["labels"]));
    }
    pool.autoscaled = true;
    out.pools.push_back(std::move(pool));
    return util::Status::ok();
  }

  util::Status pool(const YAML::Node& p, ClusterConfig& out) {
    if (p.IsMap() && p["instanceType"]) return cloud_pool(p, out);
    TY_RETURN_IF_ERROR(
        only_keys(p, "a pool",
                  {"name", "kind", "gpu", "gpusPerNode", "nodes", "cpu", "memory", "mig",
                   "nodesPerRack", "labels", "pricePerNodeHour", "minNodes"}));
    if (!p["name"]) return error(p, "a pool needs a name");
    model::Pool pool;
    TY_ASSIGN_OR_RETURN(pool.name, str(p["name"], "name"));
    if (!names_.insert(pool.name).second)
      return error(p["name"], fmt::format("pool '{}' is defined twice", pool.name));
    if (p["kind"]) {
      TY_ASSIGN_OR_RETURN(std::string kind, str(p["kind"], "kind"));
      auto k = model::parse_pool_kind(kind);
      if (!k.is_ok()) return error(p["kind"], k.status().message());
      pool.kind = *k;
    }
    if (!p["nodes"]) return error(p, fmt::format("pool '{}' needs nodes: <count>", pool.name));
    TY_ASSIGN_OR_RETURN(const int64_t count, integer(p["nodes"], "nodes", 0, kMaxClusterNodes));
    TY_RETURN_IF_ERROR(room_for_nodes(p["nodes"], out, count));
    pool.max_nodes = static_cast<int>(count);
    if (p["minNodes"]) {
      TY_ASSIGN_OR_RETURN(const int64_t mn, integer(p["minNodes"], "minNodes", 0, count));
      pool.min_nodes = static_cast<int>(mn);
    } else {
      pool.min_nodes = pool.max_nodes;
    }
    model::Node tmpl;
    tmpl.pool = pool.name;
    tmpl.cpu = model::CpuMilli(64000);
    tmpl.memory = model::gib(512);
    if (p["gpu"]) {
      TY_ASSIGN_OR_RETURN(tmpl.gpu_model, gpu_model(p["gpu"]));
      if (!p["gpusPerNode"])
        return error(p, fmt::format("pool '{}' has gpu but no gpusPerNode", pool.name));
    }
    if (p["gpusPerNode"]) {
      if (!p["gpu"])
        return error(p["gpusPerNode"], "gpusPerNode needs gpu: <model> in the same pool");
      TY_ASSIGN_OR_RETURN(const int64_t g,
                          integer(p["gpusPerNode"], "gpusPerNode", 0, model::kMaxGpusPerNode));
      tmpl.gpu_count = static_cast<int>(g);
    }
    pool.gpu_model = tmpl.gpu_model;
    pool.gpus_per_node = tmpl.gpu_count;
    TY_RETURN_IF_ERROR(node_fields(p, tmpl));
    pool.cpu = tmpl.cpu;
    pool.memory = tmpl.memory;
    pool.mig_enabled = tmpl.mig_enabled;
    pool.labels = tmpl.labels;
    int64_t per_rack = 0;
    if (p["nodesPerRack"]) {
      TY_ASSIGN_OR_RETURN(per_rack, integer(p["nodesPerRack"], "nodesPerRack", 1, 1000000));
    }
    if (p["pricePerNodeHour"]) {
      TY_ASSIGN_OR_RETURN(pool.price_per_node_hour,
                          number(p["pricePerNodeHour"], "pricePerNodeHour", 0));
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

  util::Status node(const YAML::Node& n, ClusterConfig& out) {
    TY_RETURN_IF_ERROR(room_for_nodes(n, out, 1));
    TY_RETURN_IF_ERROR(only_keys(
        n, "a node", {"name", "gpu", "gpus", "cpu", "memory", "mig", "rack", "labels", "pool"}));
    model::Node node;
    if (!n["name"]) return error(n, "a node needs a name");
    TY_ASSIGN_OR_RETURN(node.name, str(n["name"], "name"));
    if (!names_.insert(node.name).second)
      return error(n["name"], fmt::format("'{}' is defined twice", node.name));
    node.cpu = model::CpuMilli(64000);
    node.memory = model::gib(512);
    if (n["gpu"]) {
      TY_ASSIGN_OR_RETURN(node.gpu_model, gpu_model(n["gpu"]));
      if (!n["gpus"])
        return error(n, fmt::format("node '{}' has gpu but no gpus: <count>", node.name));
      TY_ASSIGN_OR_RETURN(const int64_t g, integer(n["gpus"], "gpus", 0, model::kMaxGpusPerNode));
      node.gpu_count = static_cast<int>(g);
    } else if (n["gpus"]) {
      return error(n["gpus"], "gpus needs gpu: <model> on the same node");
    }
    if (n["rack"]) {
      TY_ASSIGN_OR_RETURN(node.rack, str(n["rack"], "rack"));
    }
    if (n["pool"]) {
      TY_ASSIGN_OR_RETURN(node.pool, str(n["pool"], "pool"));
    }
    TY_RETURN_IF_ERROR(node_fields(n, node));
    out.nodes.push_back(std::move(node));
    return util::Status::ok();
  }

  util::Result<std::map<std::string, model::GpuMilli>> gpu_amounts(const YAML::Node& n,
                                                                   std::string_view what) const {
    if (!n.IsMap())
      return error(n, fmt::format("{} must map a GPU model (or \"*\" for all) to GPUs", what));
    std::map<std::string, model::GpuMilli> out;
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      TY_ASSIGN_OR_RETURN(const double gpus, number(kv.second, fmt::format("{}.{}", what, key), 0));
      out[key == model::kAnyGpuModel ? key : model::canonical_accelerator_name(key)] =
          model::GpuMilli(static_cast<int64_t>(gpus * model::kMilliPerGpu + 0.5));
    }
    return out;
  }

  // budget: {usd: 500, period: month}
  util::Status budget(const YAML::Node& b, model::Team& team) const {
    if (!b.IsMap()) return error(b, "budget must be a mapping like {usd: 500, period: month}");
    TY_RETURN_IF_ERROR(only_keys(b, "a budget", {"usd", "period"}));
    if (!b["usd"]) return error(b, "budget needs usd: <amount per period>");
    TY_ASSIGN_OR_RETURN(team.budget_usd, number(b["usd"], "usd", 0));
    if (team.budget_usd <= 0) return error(b["usd"], "budget usd must be > 0");
    if (b["period"]) {
      TY_ASSIGN_OR_RETURN(std::string period, str(b["period"], "period"));
      if (period == "day") {
        team.budget_period = model::Team::BudgetPeriod::Day;
      } else if (period == "month") {
        team.budget_period = model::Team::BudgetPeriod::Month;
      } else {
        return error(b["period"], fmt::format("budget period '{}' is not day or month", period));
      }
    }
    return util::Status::ok();
  }

  util::Status team(const YAML::Node& t, ClusterConfig& out) {
    TY_RETURN_IF_ERROR(
        only_keys(t, "a team", {"name", "weight", "cohort", "quota", "borrowingLimit", "budget"}));
    model::Team team;
    if (!t["name"]) return error(t, "a team needs a name");
    TY_ASSIGN_OR_RETURN(team.name, str(t["name"], "name"));
    // The same rule as spec.team and API tokens, so every configured team can own jobs.
    if (auto st = check_team_name(team.name); !st.is_ok()) return error(t["name"], st.message());
    for (const auto& other : out.teams) {
      if (other.name == team.name)
        return error(t["name"], fmt::format("team '{}' is defined twice", team.name));
    }
    if (t["weight"]) {
      TY_ASSIGN_OR_RETURN(team.weight, number(t["weight"], "weight", 0));
      if (team.weight <= 0) return error(t["weight"], "weight must be > 0");
    }
    if (t["cohort"]) {
      TY_ASSIGN_OR_RETURN(team.cohort, str(t["cohort"], "cohort"));
    }
    if (t["quota"]) {
      TY_ASSIGN_OR_RETURN(auto quota, gpu_amounts(t["quota"], "quota"));
      for (const auto& [k, v] : quota) team.quotas[k] = {v, model::GpuMilli(-1)};
    }
    if (t["borrowingLimit"]) {
      TY_ASSIGN_OR_RETURN(auto limits, gpu_amounts(t["borrowingLimit"], "borrowingLimit"));
      for (const auto& [k, v] : limits) {
        auto it = team.quotas.find(k);
        if (it == team.quotas.end()) {
          return error(t["borrowingLimit"],
                       fmt::format("borrowingLimit for '{}' needs a quota for '{}' too", k, k));
        }
        it->second.borrowing_limit = v;
      }
    }
    if (t["budget"]) TY_RETURN_IF_ERROR(budget(t["budget"], team));
    out.teams.push_back(std::move(team));
    return util::Status::ok();
  }

  util::Status root_keys(const YAML::Node& root) const {
    std::vector<std::string> allowed = {"name", "teams"};
    if (options_.allow_nodes) allowed.insert(allowed.end(), {"pools", "nodes"});
    allowed.insert(allowed.end(), options_.extra_root_keys.begin(), options_.extra_root_keys.end());
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      if (key == "pools" || key == "nodes") {
        return error(kv.first, fmt::format("'{}' is not allowed here: the nodes are this "
                                           "machine's GPUs (see --gpus)",
                                           key));
      }
      return error(kv.first, fmt::format("unknown key '{}' in {}; allowed: {}", key,
                                         options_.allow_nodes ? "the cluster file" : "the config",
                                         fmt::join(allowed, ", ")));
    }
    return util::Status::ok();
  }

  util::Result<ClusterConfig> parse(const YAML::Node& root) {
    if (!root.IsMap())
      return error(root, "the cluster file must be a mapping with pools:, nodes: and teams:");
    TY_RETURN_IF_ERROR(root_keys(root));
    ClusterConfig out;
    if (root["name"]) {
      TY_ASSIGN_OR_RETURN(out.name, str(root["name"], "name"));
    }
    for (const char* section : {"pools", "nodes", "teams"}) {
      const YAML::Node list = root[section];
      if (!list || (!options_.allow_nodes && std::string_view(section) != "teams")) continue;
      if (!list.IsSequence())
        return error(list, fmt::format("{} must be a list (items start with '- ')", section));
      for (const auto& item : list) {
        if (std::string_view(section) == "pools") {
          TY_RETURN_IF_ERROR(pool(item, out));
        } else if (std::string_view(section) == "nodes") {
          TY_RETURN_IF_ERROR(node(item, out));
        } else {
          TY_RETURN_IF_ERROR(team(item, out));
        }
      }
    }
    const bool cloud = std::any_of(out.pools.begin(), out.pools.end(),
                                   [](const model::Pool& p) { return p.autoscaled; });
    if (out.nodes.empty() && options_.require_nodes && !cloud)
      return error(root,
                   "the cluster has no nodes; add a pool with nodes: <count> or a nodes: list");
    int64_t id = 1;
    for (auto& n : out.nodes) n.id = util::NodeId(id++);
    return out;
  }

 private:
  std::string file_;
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
  try {
    const YAML::Node root = YAML::Load(text);
    Parser parser(file, options);
    return parser.parse(root);
  } catch (const YAML::Exception& e) {
    return util::invalid_argument(fmt::format("{}:{}:{}: not valid YAML: {}", file, e.mark.line + 1,
                                              e.mark.column + 1, e.msg));
  }
}

util::Result<ClusterConfig> load_cluster_yaml(const std::string& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path, {.what = "the cluster file"}));
  return parse_cluster_yaml(text, path);
}

}  // namespace trainyard::model
