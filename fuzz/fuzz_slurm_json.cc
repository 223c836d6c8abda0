// Feeds arbitrary bytes to the Slurm JSON readers (exec/slurm_json.h): parse_squeue_json,
// parse_slurm_nodes_json, parse_gres_gpus, and model::expand_hostlist on every job's node list
// (capped, as the executor caps it). Each must return a value or a Status for any input; a
// crash, a hang, a sanitizer report or a broken invariant below is a bug.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "exec/slurm_json.h"
#include "model/slurm_hostlist.h"
#include "util/status.h"

namespace {

constexpr size_t kMaxHosts = 4096;

void check_gres(std::string_view gres) {
  for (const auto& g : trainyard::exec::parse_gres_gpus(gres)) {
    TY_CHECK(g.count >= 0 && g.count <= (1 << 20));
    TY_CHECK(g.indices.size() <= 1024);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainyard;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto jobs = exec::parse_squeue_json(text); jobs.is_ok()) {
    for (const exec::SlurmJob& j : *jobs) {
      TY_CHECK(j.id > 0);
      if (!j.nodes.empty()) {
        auto hosts = model::expand_hostlist(j.nodes, kMaxHosts);
        if (hosts.is_ok()) TY_CHECK(hosts->size() <= kMaxHosts);
      }
      for (const int gpus : j.gpus_per_node) TY_CHECK(gpus >= 0);
    }
  }

  if (auto nodes = exec::parse_slurm_nodes_json(text); nodes.is_ok()) {
    std::set<std::string> names;
    for (const exec::SlurmNodeInfo& n : *nodes) {
      TY_CHECK(!n.name.empty());
      TY_CHECK(names.insert(n.name).second);  // one entry per node name
      check_gres(n.gres);
      check_gres(n.gres_used);
    }
  }

  // The GRES reader alone, on the whole input.
  check_gres(text);
  return 0;
}
