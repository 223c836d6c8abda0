// Synthetic GPU readings. Each profile is a Shape (utilization, memory share, temperature, ...)
// over the job's elapsed time; the model's power, clocks and slowdown threshold turn it into a
// sample. Job-constant choices (where in its range a job's memory sits) are seeded from the
// device and the job, per-sample jitter from the device and the sample time.
#include "telemetry/synthetic_curves.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "model/sim_gpu_profile.h"

namespace trainyard::telemetry {
namespace {

struct ModelRow {
  std::string_view model;
  SyntheticModelSpec spec;
};
// Board power (TDP) and boost clocks from vendor datasheets; K80 is one of its board's two GPUs.
// HBM, NVLink (the SXM boards the catalog's data-center models stand for) and GPM (Hopper).
constexpr ModelRow kModels[] = {
    {"H100-80GB", {700, 1980, 2619, true, true, true}},
    {"H200-141GB", {700, 1980, 3201, true, true, true}},
    {"A100-80GB", {400, 1410, 1593, true, true, false}},
    {"A100-40GB", {400, 1410, 1215, true, true, false}},
    {"L40S", {350, 2520, 9001}},
    {"L4", {72, 2040, 6251}},
    {"A10G", {150, 1710, 6251}},
    {"A10", {150, 1695, 6251}},
    {"T4", {70, 1590, 5001}},
    {"V100-16GB", {300, 1530, 877, true, true, false}},
    {"V100-32GB", {300, 1530, 877, true, true, false}},
    {"P100", {250, 1480, 715, true, false, false}},
    {"K80", {150, 875, 2505}},
    {"RTX-2080TI", {250, 1545, 7000}},
};

constexpr double kIdleTempC = 35;
constexpr double kWarmupTauS = 120;  // thermal time constant of a GPU that starts working
constexpr double kIdleSmClockMhz = 210;
constexpr double kIdlePowerShare = 0.09;  // of TDP
constexpr double kBusyPowerShare = 0.88;  // of TDP at 100% utilization and full clocks
constexpr double kHealthyUtil = 94;
constexpr int64_t kBurstPeriodMs = 7000;  // data-bound: a batch arrives every 7 s...
constexpr int64_t kBurstMs = 2000;        // ...and takes 2 s to compute
constexpr double kLeakStartShare = 0.30;
constexpr double kLeakEndShare = 0.95;
constexpr double kLeakDurationS = 1800;
constexpr double kHeatingCPerMin = 2.5;  // overheating: crosses 87 C after ~8 minutes
constexpr double kMaxOverheatC = kSyntheticSlowdownC + 6;
constexpr double kThrottledClockCut = 0.35;    // clocks lost when fully into thermal slowdown
constexpr double kHbmAboveGpuC = 4;            // HBM stacks run a few degrees above the die
constexpr double kDramPerMemUtil = 0.8;        // DRAM bandwidth share per memory-controller busy
constexpr double kNvlinkBusyBytesPerS = 30e9;  // each way, a data-parallel job's all-reduce

// Jitter channels: one per quantity, so quantities of one sample vary independently.
enum Channel : uint64_t {
  kUtil = 1,
  kMemUtil,
  kMemory,
  kTemp,
  kPower,
  kClock,
  kPcie,
  kJobMemory,
  kTensor,
  kNvlink
};

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_text(std::string_view s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

double unit_interval(uint64_t bits) {  // [0, 1)
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Deterministic noise of one sample: in [-1, 1] per channel.
class Jitter {
 public:
  Jitter(std::string_view uuid, int64_t now_ms)
      : seed_(mix64(hash_text(uuid) ^ mix64(static_cast<uint64_t>(now_ms)))) {}
  double operator()(Channel channel) const {
    return unit_interval(mix64(seed_ + channel * 0x9e3779b97f4a7c15ull)) * 2 - 1;
  }

 private:
  uint64_t seed_;
};

// Where in its profile's range one job on one device sits, constant over the job: [0, 1).
double job_constant(std::string_view uuid, const SyntheticLoad& load, Channel channel) {
  return unit_interval(mix64(hash_text(uuid) ^ mix64(hash_text(load.job_id) + channel)));
}

// What a profile does at one moment, before the model's figures are applied.
struct Shape {
  double util = 0;  // %
  double mem_util = 0;
  double memory_share = 0;  // of the device's memory
  double temperature_c = kIdleTempC;
  double sm_active_ratio = 0;  // SM activity per unit of utilization
  double tensor_share = 0;     // tensor-pipe activity per unit of SM activity (mixed precision)
  double pcie_rx_bytes_per_s = 0;
  bool computing = false;  // clocks boosted; false for a GPU that is merely held
};

double warm(double elapsed_s, double target_c) {
  return kIdleTempC + (target_c - kIdleTempC) * (1 - std::exp(-elapsed_s / kWarmupTauS));
}

Shape healthy(const Jitter& j, double job, double elapsed_s) {
  return {.util = kHealthyUtil + 3 * j(kUtil),
          .mem_util = 45 + 5 * j(kMemUtil),
          .memory_share = 0.72 + 0.10 * job + 0.003 * j(kMemory),
          .temperature_c = warm(elapsed_s, 67 + 3 * job) + 0.5 * j(kTemp),
          .sm_active_ratio = 0.8,
          .tensor_share = 0.6 + 0.05 * j(kTensor),
          .pcie_rx_bytes_per_s = 1.5e9 * (1 + 0.2 * j(kPcie)),
          .computing = true};
}

// The input pipeline cannot keep up: a short burst of compute per batch, then waiting.
Shape data_bound(const Jitter& j, double job, int64_t elapsed_ms) {
  bool burst = elapsed_ms % kBurstPeriodMs < kBurstMs;
  return {.util = burst ? 92 + 4 * j(kUtil) : 2 + 2 * std::abs(j(kUtil)),
          .mem_util = burst ? 40 + 5 * j(kMemUtil) : 3,
          .memory_share = 0.68 + 0.04 * job + 0.003 * j(kMemory),
          .temperature_c = warm(static_cast<double>(elapsed_ms) / 1000, 55) + 0.5 * j(kTemp),
          .sm_active_ratio = 0.75,
          .tensor_share = 0.6 + 0.05 * j(kTensor),
          .pcie_rx_bytes_per_s = 6e9 * (1 + 0.2 * j(kPcie)),
          .computing = true};
}

Shape underfilled(const Jitter& j, double job, double elapsed_s) {
  return {.util = 37.5 + 6 * j(kUtil),
          .mem_util = 15 + 3 * j(kMemUtil),
          .memory_share = 0.105 + 0.04 * job + 0.003 * j(kMemory),
          .temperature_c = warm(elapsed_s, 52) + 0.5 * j(kTemp),
          .sm_active_ratio = 0.35,  // small batches leave most SMs empty
          .tensor_share = 0.45 + 0.05 * j(kTensor),
          .pcie_rx_bytes_per_s = 0.5e9 * (1 + 0.2 * j(kPcie)),
          .computing = true};
}

// A process holds memory and computes nothing.
Shape held_idle(const Jitter& j, double job, double elapsed_s) {
  return {.memory_share = 0.15 + 0.10 * job, .temperature_c = warm(elapsed_s, 40) + 0.5 * j(kTemp)};
}

bool is_fp32(std::string dtype) {
  std::transform(dtype.begin(), dtype.end(), dtype.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return dtype == "fp32" || dtype == "float32" || dtype == "torch.float32" || dtype == "float" ||
         dtype == "f32";
}

Shape shape_of(const GpuDevice& device, const SyntheticLoad* load, const Jitter& j,
               int64_t now_ms) {
  if (!load) return {.temperature_c = kIdleTempC + 0.5 * j(kTemp)};
  int64_t elapsed_ms = std::max<int64_t>(0, now_ms - util::to_millis(load->start));
  double elapsed_s = static_cast<double>(elapsed_ms) / 1000;
  double job = job_constant(device.uuid, *load, kJobMemory);
  const std::string& p = load->profile;
  if (p == model::kSimProfileIdle) return held_idle(j, job, elapsed_s);
  Shape s;
  if (p == model::kSimProfileDataBound) {
    s = data_bound(j, job, elapsed_ms);
  } else if (p == model::kSimProfileUnderfilled) {
    s = underfilled(j, job, elapsed_s);
  } else {  // healthy, and the base of memory-leak and overheating (and of unknown profiles)
    s = healthy(j, job, elapsed_s);
  }
  if (p == model::kSimProfileMemoryLeak) {  // no jitter: a leak only grows
    s.memory_share = kLeakStartShare +
                     (kLeakEndShare - kLeakStartShare) * std::min(1.0, elapsed_s / kLeakDurationS);
  } else if (p == model::kSimProfileOverheating) {
    s.temperature_c =
        std::min(kMaxOverheatC, warm(elapsed_s, 68) + kHeatingCPerMin * elapsed_s / 60) +
        0.3 * j(kTemp);
  }
  // Training in fp32 (the profile, or the dtype the job reports) runs its matmuls on the FMA
  // pipes: the tensor cores stay idle whatever the rest of the profile does.
  if (p == model::kSimProfileFp32 || is_fp32(load->dtype))
    s.tensor_share = 0.002 * (1 + j(kTensor));
  // Measured data waits override the profile: the GPU computes only while it is not waiting.
  if (load->data_wait_fraction) {
    double busy = 1 - std::clamp(*load->data_wait_fraction, 0.0, 1.0);
    s.util = busy * (kHealthyUtil + 3 * j(kUtil));
    s.mem_util = busy * (45 + 5 * j(kMemUtil));
  }
  return s;
}

// Thermal slowdown: software throttling from 2 C below the threshold, hardware at it; the
// clocks fall by up to kThrottledClockCut over the 8 C above where throttling starts.
double apply_heat(double temperature_c, GpuSample& out) {
  double start = kSyntheticSlowdownC - 2;
  if (temperature_c >= start) *out.throttle_reasons |= kThrottleSwThermal;
  if (temperature_c >= kSyntheticSlowdownC) *out.throttle_reasons |= kThrottleHwThermal;
  return 1 - kThrottledClockCut * std::clamp((temperature_c - start) / 8, 0.0, 1.0);
}

bool has_row_remapping(std::string_view model) {
  return model.starts_with("A100") || model.starts_with("H100") || model.starts_with("H200");
}

// The fields of dcgm-exporter's defaults beyond the basic ones: memory temperature, PCIe
// replays, row remapping, NVLink traffic, and (GPM models, whole GPUs only) profiling activity.
void add_dcgm_fields(const GpuDevice& device, const SyntheticModelSpec& spec, const Shape& shape,
                     const Jitter& j, double util, GpuSample& s) {
  if (spec.hbm) s.memory_temperature_c = shape.temperature_c + kHbmAboveGpuC + 0.5 * j(kTemp);
  s.pcie_replay_count = 0;
  if (has_row_remapping(device.model)) {
    s.remapped_rows_correctable = 0;
    s.remapped_rows_uncorrectable = 0;
    s.row_remap_failed = false;
  }
  if (spec.nvlink) {
    const double rate =
        shape.computing ? kNvlinkBusyBytesPerS * util / 100 * (1 + 0.1 * j(kNvlink)) : 0;
    s.nvlink_tx_bytes_per_s = rate;
    s.nvlink_rx_bytes_per_s = rate;
  }
  if (!spec.gpm || device.mig_enabled) return;
  const double sm_active = util * shape.sm_active_ratio;
  s.sm_active_percent = sm_active;
  s.tensor_active_percent = std::clamp(sm_active * shape.tensor_share, 0.0, 100.0);
  s.gr_engine_active_percent = util;
  s.dram_active_percent = std::clamp(shape.mem_util * kDramPerMemUtil, 0.0, 100.0);
}

void add_processes(const SyntheticLoad* load, bool mig, GpuSample& out) {
  if (!load || load->pids.empty()) return;
  auto n = static_cast<uint64_t>(load->pids.size());
  uint64_t used = out.memory_used_bytes.value_or(0);
  for (size_t i = 0; i < load->pids.size(); ++i) {
    GpuProcessSample p{.pid = load->pids[i], .memory_bytes = used / n};
    if (i == 0) *p.memory_bytes += used % n;  // the split adds up to the device's memory
    if (!mig && out.gpu_util_percent)
      p.sm_util_percent = *out.gpu_util_percent / static_cast<double>(n);
    out.processes.push_back(p);
  }
}

}  // namespace

SyntheticModelSpec synthetic_model_spec(std::string_view model) {
  for (const ModelRow& row : kModels) {
    if (row.model == model) return row.spec;
  }
  return {};
}

GpuSample synthesize_sample(const GpuDevice& device, const SyntheticLoad* load, util::Time now) {
  const int64_t now_ms = util::to_millis(now);  // the curves and their jitter count in ms
  const SyntheticModelSpec spec = synthetic_model_spec(device.model);
  const Jitter j(device.uuid, now_ms);
  const Shape shape = shape_of(device, load, j, now_ms);
  GpuSample s;
  s.time = now;
  s.index = device.index;
  s.uuid = device.uuid;
  s.name = device.name;
  s.model = device.model;
  s.pci_bus_id = fmt::format("00000000:{:02X}:00.0", device.index);
  auto total = static_cast<uint64_t>(device.memory.value());
  s.memory_total_bytes = total;
  s.memory_used_bytes =
      static_cast<uint64_t>(std::clamp(shape.memory_share, 0.0, 1.0) * static_cast<double>(total));
  double util = std::clamp(shape.util, 0.0, 100.0);
  s.temperature_c = shape.temperature_c;
  s.slowdown_temperature_c = kSyntheticSlowdownC;
  s.throttle_reasons = shape.computing && util >= 5 ? 0 : kThrottleGpuIdle;
  double clock_share = apply_heat(shape.temperature_c, s);
  s.sm_clock_mhz = shape.computing ? spec.max_sm_clock_mhz * (0.97 + 0.01 * j(kClock)) * clock_share
                                   : kIdleSmClockMhz;
  s.mem_clock_mhz = spec.max_mem_clock_mhz;
  double power_share =
      kIdlePowerShare + (kBusyPowerShare - kIdlePowerShare) * util / 100 * clock_share;
  s.power_w = spec.tdp_w * std::clamp(power_share + 0.01 * j(kPower), 0.05, 1.0);
  s.power_limit_w = spec.tdp_w;
  s.ecc_corrected_volatile = 0;
  s.ecc_uncorrected_volatile = 0;
  s.xid_count = 0;
  s.pcie_rx_bytes_per_s = shape.pcie_rx_bytes_per_s;
  s.pcie_tx_bytes_per_s = shape.pcie_rx_bytes_per_s / 4;
  // As with NVML: no utilization on a GPU in MIG mode; profiling activity only where GPM has it
  // (Hopper).
  if (!device.mig_enabled) {
    s.gpu_util_percent = util;
    s.mem_util_percent = std::clamp(shape.mem_util, 0.0, 100.0);
  }
  add_dcgm_fields(device, spec, shape, j, util, s);
  add_processes(load, device.mig_enabled, s);
  return s;
}

void SyntheticCounters::add(GpuSample& s) {
  const int64_t t_ms = util::to_millis(s.time);
  if (last_ms_ && last_ && t_ms > *last_ms_) {
    const auto dt_ms = static_cast<double>(t_ms - *last_ms_);
    // Trapezoids: W x ms = mJ.
    energy_mj_ += (last_->power_w.value_or(0) + s.power_w.value_or(0)) / 2 * dt_ms;
    const uint64_t bits = last_->throttle_reasons.value_or(0);
    if (bits & (kThrottleSwPowerCap | kThrottleHwPowerBrake)) power_us_ += dt_ms * 1000;
    if (bits & (kThrottleSwThermal | kThrottleHwThermal | kThrottleHwSlowdown))
      thermal_us_ += dt_ms * 1000;
    if (bits & kThrottleGpuIdle) low_util_us_ += dt_ms * 1000;
  }
  if (!last_ms_ || t_ms > *last_ms_) {
    last_ms_ = t_ms;
    last_ = s;
  }
  s.energy_mj = static_cast<uint64_t>(std::llround(energy_mj_));
  s.violation_power_us = static_cast<uint64_t>(std::llround(power_us_));
  s.violation_thermal_us = static_cast<uint64_t>(std::llround(thermal_us_));
  s.violation_low_util_us = static_cast<uint64_t>(std::llround(low_util_us_));
  s.violation_sync_boost_us = 0;
  s.violation_board_limit_us = 0;
  s.violation_reliability_us = 0;
}

}  // namespace trainyard::telemetry
