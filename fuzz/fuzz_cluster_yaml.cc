// Feeds arbitrary bytes to the cluster YAML parser. It must return a ClusterConfig or a Status
// for any input (yaml-cpp exceptions are caught at the parse boundary); a crash, a hang, a
// sanitizer report or a broken invariant below is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/cluster_config.h"
#include "model/node.h"
#include "util/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainyard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cluster = model::parse_cluster_yaml(text, "fuzz.yaml");
  if (!cluster.is_ok()) return 0;
  TY_CHECK(!cluster->nodes.empty());
  int64_t id = 1;
  for (const model::Node& n : cluster->nodes) {
    TY_CHECK(n.id == util::NodeId(id++));
    TY_CHECK(n.gpu_count >= 0 && n.gpu_count <= model::kMaxGpusPerNode);
  }
  return 0;
}
