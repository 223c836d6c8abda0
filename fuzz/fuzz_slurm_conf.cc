// Feeds arbitrary bytes to the slurm.conf reader (with and without a default GPU model and a
// GRES mapping) and to the GRES type mapping. It must return a ClusterConfig or a Status for
// any input; a crash, a hang, a sanitizer report or a broken invariant below is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/accelerator.h"
#include "model/node.h"
#include "model/slurm_conf.h"
#include "model/slurm_gres.h"
#include "util/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainyard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const model::SlurmConfOptions with_defaults{.gres_types = {{"mi250", "H100"}},
                                              .default_gpu_model = "A100"};
  for (const auto& opts : {model::SlurmConfOptions{}, with_defaults}) {
    auto cluster = model::parse_slurm_conf(text, "fuzz.conf", opts);
    if (!cluster.is_ok()) continue;
    TY_CHECK(!cluster->nodes.empty());
    int64_t id = 1;
    for (const model::Node& n : cluster->nodes) {
      TY_CHECK(n.id == util::NodeId(id++));
      TY_CHECK(n.gpu_count >= 0 && n.gpu_count <= model::kMaxGpusPerNode);
      TY_CHECK(n.gpu_count == 0 || model::find_accelerator(n.gpu_model) != nullptr);
    }
  }
  if (auto a = model::accelerator_for_gres_type(text)) {
    TY_CHECK(model::find_accelerator(*a) != nullptr);
  }
  return 0;
}
