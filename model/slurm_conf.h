// Reads a Slurm site's slurm.conf into the ClusterConfig the YAML cluster files produce, so a
// Slurm site can replay its history on its own nodes: NodeName lines give nodes (GPU model from
// Gres=gpu:TYPE:N through model/slurm_gres.h, CPUs, RealMemory, Features as labels) and
// PartitionName lines give partition labels. Other keys are ignored. Errors name file:line and
// the fix; no exception escapes.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "model/cluster_config.h"
#include "util/status.h"

namespace trainyard::model {

// Label a node gets for each partition it belongs to, with the value "true":
// "slurm.partition/gpu". Features (Feature=ib,nvlink) become labels "ib"="true", ...
inline constexpr std::string_view kSlurmPartitionLabelPrefix = "slurm.partition/";

struct SlurmConfOptions {
  // GRES type -> accelerator name (any name find_accelerator() accepts); wins over the
  // built-in mapping. Keys are compared without case.
  std::map<std::string, std::string> gres_types;
  // The accelerator of nodes whose Gres=gpu:N names no type; empty = such nodes are an error.
  std::string default_gpu_model;
};

util::Result<ClusterConfig> parse_slurm_conf(const std::string& text, const std::string& file,
                                             const SlurmConfOptions& opts = {});
util::Result<ClusterConfig> load_slurm_conf(const std::string& path,
                                            const SlurmConfOptions& opts = {});

// True for paths trainyard reads as slurm.conf: the file name is slurm.conf or ends in .conf.
bool is_slurm_conf_path(std::string_view path);

}  // namespace trainyard::model
