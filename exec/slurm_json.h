// Slurm's machine-readable answers, read into plain structs: `squeue --json` (jobs) and
// `sinfo --json` / `scontrol show nodes --json` (nodes), plus hostlists ("n[1-3,7]") and GRES
// strings ("gpu:h100:2(S:0-1)", "gpu:h100:1(IDX:0)"). Tolerant of the schema changes between
// Slurm releases (22.05's OpenAPI v0.0.38: plain strings and numbers; 23.02 and later: state
// arrays and {"set", "number"} objects). Pure functions: no I/O, fuzzed (fuzz/fuzz_slurm_json).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace trainyard::exec {

struct SlurmJob {
  int64_t id = 0;
  int64_t het_job_id = 0;  // the leader's id for a component of a heterogeneous job, else 0
  int het_job_offset = 0;
  std::string name;
  std::string comment;
  std::string state;   // the base state, upper case: PENDING, RUNNING, COMPLETED, CANCELLED, ...
  std::string reason;  // state_reason: "None", "Resources", "ReqNodeNotAvail, ...", ...
  std::string nodes;   // hostlist of the allocated nodes ("" while pending)
  bool has_exit = false;
  int exit_code = 0;    // the batch script's return code
  int exit_signal = 0;  // the signal that ended it, 0 if none
  int64_t submit_time = 0;
  int64_t start_time = 0;
  int64_t end_time = 0;
  int64_t user_id = -1;
  std::string partition;
  // GPUs per allocated node, in the order of the expanded `nodes` (from gres_detail).
  std::vector<int> gpus_per_node;
  int64_t cpus = 0;  // allocated CPUs (all nodes)
};

struct SlurmNodeInfo {
  std::string name;
  std::string address;             // NodeAddr (what other nodes connect to)
  std::string hostname;            // NodeHostname
  std::string state;               // base state, upper case: IDLE, MIXED, ALLOCATED, DOWN, ...
  std::vector<std::string> flags;  // DRAIN, NOT_RESPONDING, MAINTENANCE, ... (upper case)
  std::string reason;
  int64_t cpus = 0;
  int64_t alloc_cpus = 0;
  int64_t real_memory_mb = 0;
  int64_t alloc_memory_mb = 0;
  std::string gres;       // "gpu:h100:2" (configured)
  std::string gres_used;  // "gpu:h100:1(IDX:0)"
  std::vector<std::string> features;
  std::vector<std::string> partitions;
};

util::Result<std::vector<SlurmJob>> parse_squeue_json(std::string_view json);
// Accepts sinfo --json (22.05: {"nodes": [...]}; later: {"sinfo": [{"nodes": ..., ...}]}) and
// scontrol show nodes --json ({"nodes": [...]}). One entry per node name.
util::Result<std::vector<SlurmNodeInfo>> parse_slurm_nodes_json(std::string_view json);

struct GresGpus {
  std::string type;  // "" when the GRES names no type
  int count = 0;
  std::vector<int> indices;  // from "(IDX:0-1,3)"; empty when not given or N/A
};
// The GPU entries of a GRES string ("gpu:h100:2(S:0-1),shard:4" -> {h100, 2}); entries of
// other GRES (shard, mps, nic) are ignored. Several GPU types on one node give several entries.
std::vector<GresGpus> parse_gres_gpus(std::string_view gres);

}  // namespace trainyard::exec
