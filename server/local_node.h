// A scheduler node the server runs workers on: this machine's GPUs (one node per GPU model), or a
// node bought from a cloud pool whose GPUs are synthetic (simcloud) and whose workers run here.
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
};

}  // namespace trainyard::server
