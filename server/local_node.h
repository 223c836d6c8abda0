// A scheduler node the server runs workers on: this machine's GPUs (one node per GPU model), a
// node bought from a cloud pool whose GPUs are synthetic (simcloud) and whose workers run here,
// or a node of a Slurm cluster (the Slurm executor runs its workers there).
#pragma once

#include <vector>

#include "model/node.h"
#include "telemetry/gpu_device.h"

namespace trainyard::server {

struct LocalNode {
  model::Node node;
  std::vector<telemetry::GpuDevice> gpus;  // gpu_idx -> device
  bool simulated = false;
  // Cloud nodes only: the zone it was bought in and its price per node-hour.
  std::string zone;
  double price_per_hour = 0;
  bool cloud = false;
  int slot = -1;  // cloud nodes: drive::FleetNode::slot, the order nodes_ keeps them in
  // Nodes of a batch system (Slurm): where ranks on other nodes reach this one (MASTER_ADDR),
  // what jobs outside trainyard hold there now, and why it takes no work when it does not.
  bool batch = false;
  std::string address;
  uint32_t gpus_held_outside = 0;  // bit g: GPU g counts as busy
  int64_t cpu_held_outside_milli = 0;
  std::string problem;
};

}  // namespace trainyard::server
