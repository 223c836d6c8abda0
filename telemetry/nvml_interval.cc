// GPM metrics and NVLink rates. GPM needs two samples at least 100 ms apart (nvml.h); each call
// takes a new one into the spare buffer and compares it with the previous, then swaps them.
#include "telemetry/nvml_interval.h"

#include <utility>

namespace trainyard::telemetry::nvml {
namespace {

constexpr auto kGpmMinInterval = std::chrono::milliseconds(100);

struct GpmTarget {
  unsigned int metric;
  std::optional<double> GpuSample::*field;
};
constexpr GpmTarget kGpmTargets[] = {
    {kGpmGraphicsUtil, &GpuSample::gr_engine_active_percent},
    {kGpmSmUtil, &GpuSample::sm_active_percent},
    {kGpmAnyTensorUtil, &GpuSample::tensor_active_percent},
    {kGpmDramBwUtil, &GpuSample::dram_active_percent},
};

bool has_gpm(const Api& api) {
  return api.gpm_sample_alloc && api.gpm_sample_free && api.gpm_sample_get && api.gpm_metrics_get;
}

}  // namespace

void IntervalReadings::read(Device device, const std::string& uuid, util::Time now,
                            GpuSample& out) {
  read_gpm(device, uuid, now, out);
  rates(nvlink_, uuid, now, read_nvlink_counters(api_, device), out.nvlink_tx_bytes_per_s,
        out.nvlink_rx_bytes_per_s);
  rates(pcie_, uuid, now, read_pcie_counters(api_, device), out.pcie_tx_bytes_per_s,
        out.pcie_rx_bytes_per_s);
}

void IntervalReadings::release() {
  for (auto& [uuid, g] : gpm_) {
    if (g.previous) api_.gpm_sample_free(g.previous);
    if (g.current) api_.gpm_sample_free(g.current);
    g.previous = g.current = nullptr;
    g.supported = false;
  }
}

// Checks once per GPU whether it has GPM (the query is optional: without it, trying is the
// test) and allocates its two buffers.
IntervalReadings::Gpm* IntervalReadings::gpm_of(Device device, const std::string& uuid) {
  auto [it, inserted] = gpm_.try_emplace(uuid);
  Gpm& g = it->second;
  if (!inserted) return g.supported ? &g : nullptr;
  if (!has_gpm(api_)) return nullptr;
  if (api_.gpm_query_support) {
    GpmSupport support{.version = kGpmSupportVersion, .is_supported_device = 0};
    if (api_.gpm_query_support(device, &support) != kSuccess || !support.is_supported_device)
      return nullptr;
  }
  if (api_.gpm_sample_alloc(&g.previous) != kSuccess ||
      api_.gpm_sample_alloc(&g.current) != kSuccess) {
    if (g.previous) api_.gpm_sample_free(g.previous);
    g.previous = g.current = nullptr;
    return nullptr;
  }
  g.supported = true;
  return &g;
}

void IntervalReadings::read_gpm(Device device, const std::string& uuid, util::Time now,
                                GpuSample& out) {
  Gpm* g = gpm_of(device, uuid);
  if (!g) return;
  if (g->previous_at && now - *g->previous_at < kGpmMinInterval) return;
  if (api_.gpm_sample_get(device, g->current) != kSuccess) return;
  if (g->previous_at) {
    GpmMetricsGet get{};
    get.version = kGpmMetricsGetVersion;
    get.num_metrics = std::size(kGpmTargets);
    get.sample1 = g->previous;
    get.sample2 = g->current;
    for (unsigned int i = 0; i < get.num_metrics; ++i)
      get.metrics[i].metric_id = kGpmTargets[i].metric;
    if (api_.gpm_metrics_get(&get) == kSuccess) {
      for (unsigned int i = 0; i < get.num_metrics; ++i) {
        const GpmMetric& m = get.metrics[i];
        if (m.nvml_return != kSuccess || !(m.value >= 0 && m.value <= 100)) continue;
        out.*(kGpmTargets[i].field) = m.value;
      }
    }
  }
  std::swap(g->previous, g->current);
  g->previous_at = now;
}

// The counters' change per second since the previous reading of `uuid`: none on the first, nor
// after a counter went back (a driver reload starts a new baseline). A GPU whose counters could
// not be read is forgotten, so has_pcie_counters() turns false.
void IntervalReadings::rates(std::map<std::string, Baseline>& baselines, const std::string& uuid,
                             util::Time now, const std::optional<ByteCounters>& counters,
                             std::optional<double>& tx, std::optional<double>& rx) {
  if (!counters) {
    baselines.erase(uuid);
    return;
  }
  auto it = baselines.find(uuid);
  if (it != baselines.end() && now > it->second.at &&
      counters->tx_bytes >= it->second.counters.tx_bytes &&
      counters->rx_bytes >= it->second.counters.rx_bytes) {
    const double seconds = util::to_seconds(now - it->second.at);
    tx = static_cast<double>(counters->tx_bytes - it->second.counters.tx_bytes) / seconds;
    rx = static_cast<double>(counters->rx_bytes - it->second.counters.rx_bytes) / seconds;
  }
  if (it == baselines.end() || now > it->second.at) baselines[uuid] = {*counters, now};
}

}  // namespace trainyard::telemetry::nvml
