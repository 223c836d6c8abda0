#include "model/slurm_conf.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/slurm_conf_lines.h"
#include "model/slurm_gres.h"
#include "model/slurm_hostlist.h"
#include "util/read_file.h"

namespace trainyard::model {
namespace {

// As many nodes as a YAML cluster file may describe (model/cluster_config.cc).
constexpr size_t kMaxSlurmNodes = 100'000;
// 1 PB in MB: RealMemory beyond it is a typo, and mib() stays far from overflow.
constexpr int64_t kMaxRealMemoryMb = 1'000'000'000;
constexpr int64_t kMaxCpus = 1'000'000;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

using Attrs = std::map<std::string, std::string>;  // lower-cased key -> value

struct PartitionLine {
  int line = 0;
  std::string name;
  Attrs attrs;
};

struct GpuGres {
  std::string type;  // empty = untyped
  int64_t count = 0;
};

util::Result<int64_t> whole(std::string_view text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi) {
    return util::invalid_argument(
        fmt::format("expected a whole number in {}..{}, got '{}'", lo, hi, text));
  }
  return v;
}

class SlurmConfParser {
 public:
  SlurmConfParser(std::string file, const SlurmConfOptions& opts)
      : file_(std::move(file)), opts_(opts) {}

  util::Result<ClusterConfig> parse(const std::string& text) {
    TY_RETURN_IF_ERROR(check_options());
    SlurmConfLineReader reader(text, file_);
    while (true) {
      TY_ASSIGN_OR_RETURN(std::optional<SlurmConfLine> line, reader.next());
      if (!line) break;
      TY_RETURN_IF_ERROR(dispatch(*line));
    }
    for (const PartitionLine& p : partitions_) TY_RETURN_IF_ERROR(partition(p));
    if (out_.nodes.empty()) {
      return util::invalid_argument(
          fmt::format("{}: no NodeName lines; a cluster needs nodes such as "
                      "'NodeName=gpu[01-04] Gres=gpu:a100:8 CPUs=64 RealMemory=512000'",
                      file_));
    }
    if (out_.name.empty()) out_.name = file_;
    int64_t id = 1;
    for (auto& n : out_.nodes) n.id = util::NodeId(id++);
    return std::move(out_);
  }

 private:
  util::Status error(int line, std::string_view msg) const {
    return util::invalid_argument(fmt::format("{}:{}: {}", file_, line, msg));
  }

  util::Status check_options() {
    if (!opts_.default_gpu_model.empty()) {
      const Accelerator* a = find_accelerator(opts_.default_gpu_model);
      if (a == nullptr)
        return util::invalid_argument(fmt::format(
            "the default GPU model '{}' for untyped Gres=gpu:N is not a trainyard accelerator; {}",
            opts_.default_gpu_model, known_gres_types_hint()));
      default_model_ = std::string(a->name);
    }
    for (const auto& [type, model] : opts_.gres_types) {
      if (find_accelerator(model) == nullptr)
        return util::invalid_argument(
            fmt::format("the GRES mapping {}={} names no trainyard accelerator; {}", type, model,
                        known_gres_types_hint()));
    }
    return util::Status::ok();
  }

  util::Status dispatch(const SlurmConfLine& line) {
    const std::string& key = line.words.front().first;
    if (key == "include") {
      return error(line.line,
                   "Include lines are not followed; copy the NodeName and PartitionName lines of "
                   "the included file into this one (or pass that file as --cluster)");
    }
    if (!line.has_equals) return util::Status::ok();  // a keyword we do not read
    if (key == "clustername") {
      out_.name = line.words.front().second;
    } else if (key == "nodename") {
      return node_line(line);
    } else if (key == "partitionname") {
      PartitionLine p{line.line, line.words.front().second, attrs(line)};
      if (lower(p.name) == "default") {
        for (auto& [k, v] : p.attrs) partition_defaults_[k] = v;
      } else {
        Attrs merged = partition_defaults_;
        for (auto& [k, v] : p.attrs) merged[k] = v;
        p.attrs = std::move(merged);
        partitions_.push_back(std::move(p));
      }
    }
    return util::Status::ok();
  }

  static Attrs attrs(const SlurmConfLine& line) {
    Attrs out;
    for (size_t i = 1; i < line.words.size(); ++i) out[line.words[i].first] = line.words[i].second;
    if (out.contains("feature")) out["features"] = out["feature"];
    out.erase("feature");
    return out;
  }

  util::Status node_line(const SlurmConfLine& line) {
    const std::string& names = line.words.front().second;
    if (names.empty()) return error(line.line, "NodeName= needs node names, e.g. gpu[01-04]");
    if (lower(names) == "default") {
      for (auto& [k, v] : attrs(line)) node_defaults_[k] = v;
      return util::Status::ok();
    }
    const Attrs own = attrs(line);
    Attrs merged = node_defaults_;
    for (auto& [k, v] : own) merged[k] = v;
    // A topology on the node's own line beats a CPUs= count from NodeName=DEFAULT.
    const bool own_topology = own.contains("sockets") || own.contains("corespersocket") ||
                              own.contains("threadspercore") || own.contains("boards") ||
                              own.contains("socketsperboard");
    if (own_topology && !own.contains("cpus") && !own.contains("procs")) {
      merged.erase("cpus");
      merged.erase("procs");
    }
    auto expanded = expand_hostlist(names, kMaxSlurmNodes - out_.nodes.size());
    if (!expanded.is_ok()) {
      return error(line.line, fmt::format("NodeName={}: {} (at most {} nodes in all)", names,
                                          expanded.status().message(), kMaxSlurmNodes));
    }
    Node tmpl;
    TY_RETURN_IF_ERROR(node_template(line.line, names, merged, tmpl));
    for (std::string& name : *expanded) {
      if (!node_index_.emplace(name, out_.nodes.size()).second)
        return error(line.line, fmt::format("node '{}' is defined twice; define each node on one "
                                            "NodeName line",
                                            name));
      Node n = tmpl;
      n.name = std::move(name);
      out_.nodes.push_back(std::move(n));
    }
    return util::Status::ok();
  }

  util::Result<int64_t> number(int line, const Attrs& a, const char* key, int64_t dflt, int64_t lo,
                               int64_t hi) const {
    const auto it = a.find(key);
    if (it == a.end()) return dflt;
    auto v = whole(it->second, lo, hi);
    if (!v.is_ok()) return error(line, fmt::format("{}: {}", key, v.status().message()));
    return *v;
  }

  // CPUs=, else Boards x SocketsPerBoard (or Sockets) x CoresPerSocket x ThreadsPerCore; Slurm's
  // defaults are 1 for each, as they are here.
  util::Result<int64_t> cpus(int line, const Attrs& a) const {
    if (a.contains("cpus") || a.contains("procs")) {
      const char* key = a.contains("cpus") ? "cpus" : "procs";
      return number(line, a, key, 1, 1, kMaxCpus);
    }
    TY_ASSIGN_OR_RETURN(const int64_t boards, number(line, a, "boards", 1, 1, 1024));
    TY_ASSIGN_OR_RETURN(int64_t sockets, number(line, a, "sockets", 1, 1, 1024));
    if (a.contains("socketsperboard")) {
      TY_ASSIGN_OR_RETURN(const int64_t per_board, number(line, a, "socketsperboard", 1, 1, 1024));
      sockets = boards * per_board;
    }
    TY_ASSIGN_OR_RETURN(const int64_t cores, number(line, a, "corespersocket", 1, 1, 4096));
    TY_ASSIGN_OR_RETURN(const int64_t threads, number(line, a, "threadspercore", 1, 1, 64));
    const int64_t total = sockets * cores * threads;
    if (total > kMaxCpus) return error(line, fmt::format("the node would have {} CPUs", total));
    return total;
  }

  util::Result<GpuGres> gpu_gres(int line, std::string_view node, std::string_view gres) const;

  util::Status node_template(int line, std::string_view names, const Attrs& a, Node& n) const {
    TY_ASSIGN_OR_RETURN(const int64_t cpu, cpus(line, a));
    n.cpu = CpuMilli(cpu * 1000);
    TY_ASSIGN_OR_RETURN(const int64_t mem, number(line, a, "realmemory", 1, 0, kMaxRealMemoryMb));
    n.memory = mib(mem);
    if (const auto it = a.find("features"); it != a.end()) {
      std::stringstream in(it->second);
      std::string feature;
      while (std::getline(in, feature, ',')) {
        if (!feature.empty()) n.labels[feature] = "true";
      }
    }
    if (const auto it = a.find("gres"); it != a.end()) {
      TY_ASSIGN_OR_RETURN(const GpuGres g, gpu_gres(line, names, it->second));
      n.gpu_count = static_cast<int>(g.count);
      if (g.count > 0) {
        TY_ASSIGN_OR_RETURN(n.gpu_model, gpu_model(line, names, g.type));
      }
    }
    return util::Status::ok();
  }

  util::Result<std::string> gpu_model(int line, std::string_view names,
                                      const std::string& type) const {
    if (type.empty()) {
      if (!default_model_.empty()) return default_model_;
      return error(line, fmt::format("NodeName={}: Gres=gpu:N names no GPU type, so the GPU "
                                     "model is unknown; write the type as gres.conf does "
                                     "(Gres=gpu:a100:8) or give a default model "
                                     "(trainyard simulate --slurm-default-gpu A100-80GB)",
                                     names));
    }
    if (auto model = accelerator_for_gres_type(type, opts_.gres_types)) return *model;
    return error(line, fmt::format("NodeName={}: GRES type '{}' has no mapping to a trainyard "
                                   "accelerator; rename the type in slurm.conf or map it "
                                   "(trainyard simulate --slurm-gres-map {}=MODEL). {}",
                                   names, type, type, known_gres_types_hint()));
  }

  util::Status partition(const PartitionLine& p) {
    if (p.name.empty()) return error(p.line, "PartitionName= needs a name");
    const auto it = p.attrs.find("nodes");
    if (it == p.attrs.end() || it->second.empty()) return util::Status::ok();
    const std::string label = fmt::format("{}{}", kSlurmPartitionLabelPrefix, p.name);
    if (lower(it->second) == "all") {
      for (Node& n : out_.nodes) n.labels[label] = "true";
      return util::Status::ok();
    }
    auto names = expand_hostlist(it->second, kMaxSlurmNodes);
    if (!names.is_ok())
      return error(p.line, fmt::format("PartitionName={} Nodes={}: {}", p.name, it->second,
                                       names.status().message()));
    for (const std::string& name : *names) {
      const auto node = node_index_.find(name);
      if (node == node_index_.end())
        return error(p.line, fmt::format("partition '{}' lists node '{}', which no NodeName line "
                                         "defines; add the node or remove it from Nodes= "
                                         "(NodeSet names are not read: list the nodes)",
                                         p.name, name));
      out_.nodes[node->second].labels[label] = "true";
    }
    return util::Status::ok();
  }

  std::string file_;
  const SlurmConfOptions& opts_;
  std::string default_model_;
  Attrs node_defaults_;
  Attrs partition_defaults_;
  std::vector<PartitionLine> partitions_;
  std::map<std::string, size_t> node_index_;
  ClusterConfig out_;
};

// "gpu:a100:8,mps:400" -> {a100, 8}. Entries other than gpu (mps, shard, ...) are not GPUs.
// Forms: gpu, gpu:N, gpu:TYPE, gpu:TYPE:N, gpu:TYPE:no_consume:N.
util::Result<GpuGres> SlurmConfParser::gpu_gres(int line, std::string_view node,
                                                std::string_view gres) const {
  GpuGres out;
  bool seen = false;
  std::stringstream in{std::string(gres)};
  std::string entry;
  while (std::getline(in, entry, ',')) {
    std::vector<std::string> parts;
    std::stringstream ps(entry);
    std::string part;
    while (std::getline(ps, part, ':')) parts.push_back(part);
    if (parts.empty() || lower(parts[0]) != "gpu") continue;
    int64_t count = 1;
    if (parts.size() > 1 && !parts.back().empty() &&
        std::isdigit(static_cast<unsigned char>(parts.back()[0]))) {
      auto c = whole(parts.back(), 0, kMaxGpusPerNode);
      if (!c.is_ok())
        return error(line, fmt::format("NodeName={}: Gres={}: GPU count: {}", node, gres,
                                       c.status().message()));
      count = *c;
      parts.pop_back();
    }
    std::string type;
    for (size_t i = 1; i < parts.size(); ++i) {
      if (lower(parts[i]) == "no_consume") continue;
      type += (type.empty() ? "" : ":") + parts[i];
    }
    if (seen && lower(type) != lower(out.type)) {
      return error(line, fmt::format("NodeName={}: Gres={} mixes GPU types '{}' and '{}'; a "
                                     "trainyard node has one GPU model, so define the node once "
                                     "per type (split it) or keep one gpu entry",
                                     node, gres, out.type.empty() ? "(none)" : out.type,
                                     type.empty() ? "(none)" : type));
    }
    seen = true;
    out.type = type;
    out.count += count;
    if (out.count > kMaxGpusPerNode)
      return error(line, fmt::format("NodeName={}: Gres={} gives a node {} GPUs; at most {} are "
                                     "supported",
                                     node, gres, out.count, kMaxGpusPerNode));
  }
  return out;
}

}  // namespace

util::Result<ClusterConfig> parse_slurm_conf(const std::string& text, const std::string& file,
                                             const SlurmConfOptions& opts) {
  SlurmConfParser parser(file, opts);
  return parser.parse(text);
}

util::Result<ClusterConfig> load_slurm_conf(const std::string& path, const SlurmConfOptions& opts) {
  TY_ASSIGN_OR_RETURN(const std::string text,
                      util::read_file(path, {.what = "the slurm.conf file"}));
  return parse_slurm_conf(text, path, opts);
}

bool is_slurm_conf_path(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name == "slurm.conf" || name.ends_with(".conf");
}

}  // namespace trainyard::model
