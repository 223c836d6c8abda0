// Alibaba openb node lists (openb_node_list_*.csv: sn, cpu_milli, memory_mib, gpu, model) as
// model::Node, so a simulation can run on the trace's own heterogeneous cluster. Known models
// get their canonical names (V100M16 -> V100-16GB); private ones (G2, G3) keep theirs.
#include <set>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "sim/traces/common.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

constexpr int64_t kMaxNodeCpuMilli = 1'000'000'000;
constexpr int64_t kMaxNodeMemoryMib = 1'000'000'000;

struct NodeColumns {
  int sn = 0, cpu = 0, memory = 0, gpu = 0, model = 0;
};

util::Result<NodeColumns> node_columns(const util::CsvReader& csv) {
  NodeColumns c;
  TY_ASSIGN_OR_RETURN(c.sn, csv.column("sn"));
  TY_ASSIGN_OR_RETURN(c.cpu, csv.column("cpu_milli"));
  TY_ASSIGN_OR_RETURN(c.memory, csv.column("memory_mib"));
  TY_ASSIGN_OR_RETURN(c.gpu, csv.column("gpu"));
  TY_ASSIGN_OR_RETURN(c.model, csv.column("model"));
  return c;
}

util::Result<model::Node> parse_node(const util::CsvReader& csv, const NodeColumns& c) {
  model::Node n;
  n.name = std::string(csv.field(c.sn));
  if (n.name.empty()) return csv.error_at(c.sn, "the node's serial number (its name) is empty");
  TY_ASSIGN_OR_RETURN(const int64_t cpu,
                      get_int_in(csv, c.cpu, 0, kMaxNodeCpuMilli, "milli-cores"));
  TY_ASSIGN_OR_RETURN(const int64_t mem, get_int_in(csv, c.memory, 0, kMaxNodeMemoryMib, "MiB"));
  TY_ASSIGN_OR_RETURN(const int64_t gpus,
                      get_int_in(csv, c.gpu, 0, model::kMaxGpusPerNode, "GPUs"));
  n.cpu = model::CpuMilli(cpu);
  n.memory = model::mib(mem);
  n.gpu_count = static_cast<int>(gpus);
  const std::string_view gpu_model = csv.field(c.model);
  if (gpus > 0 && gpu_model.empty()) {
    return csv.error_at(c.model, fmt::format("the node has {} GPUs but no GPU model", gpus));
  }
  if (gpus > 0) n.gpu_model = model::canonical_accelerator_name(gpu_model);
  return n;
}

}  // namespace

util::Result<std::vector<model::Node>> load_alibaba_nodes(const std::string& path) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_alibaba_nodes_from_text(std::move(text), path);
}

util::Result<std::vector<model::Node>> load_alibaba_nodes_from_text(std::string text,
                                                                    const std::string& name) {
  util::CsvReader csv = util::CsvReader::from_string(std::move(text), name);
  TY_RETURN_IF_ERROR(csv.read_header());
  TY_ASSIGN_OR_RETURN(const NodeColumns cols, node_columns(csv));
  std::vector<model::Node> nodes;
  std::set<std::string, std::less<>> names;
  while (csv.next()) {
    TY_RETURN_IF_ERROR(csv.row_status());
    TY_ASSIGN_OR_RETURN(model::Node n, parse_node(csv, cols));
    if (!names.insert(n.name).second) {
      return csv.error_at(cols.sn, fmt::format("node '{}' is listed twice", n.name));
    }
    n.id = util::NodeId(static_cast<int64_t>(nodes.size()) + 1);
    nodes.push_back(std::move(n));
  }
  if (nodes.empty())
    return util::invalid_argument(fmt::format("{}: the file lists no nodes", name));
  return nodes;
}

}  // namespace trainyard::sim
