// Synthetic GPUs for machines without any: parsed once from a "sim:..." spec, then immutable,
// so devices() needs no lock. What each GPU runs (its SyntheticLoad) changes from other threads
// and is guarded by a mutex; the readings themselves come from synthetic_curves.cc.
#include <charconv>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "telemetry/gpu_sampler.h"
#include "telemetry/synthetic_curves.h"
#include "util/thread_annotations.h"

namespace trainyard::telemetry {
namespace {

constexpr int kMaxGpusPerEntry = 64;
constexpr std::string_view kSimPrefix = "sim:";
constexpr std::string_view kExample =
    "e.g. sim:4xH100-80GB, sim:2xA100-80GB,1xL4 or "
    "sim:1xA100-40GB:mig";

class SyntheticSampler final : public GpuSampler {
 public:
  explicit SyntheticSampler(std::vector<GpuDevice> devices) : devices_(std::move(devices)) {}
  util::Result<std::vector<GpuDevice>> devices() override { return devices_; }
  util::Result<std::vector<GpuSample>> sample(util::Time now) override TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    std::vector<GpuSample> out;
    out.reserve(devices_.size());
    for (const auto& d : devices_) {
      auto load = loads_.find(d.uuid);
      out.push_back(synthesize_sample(d, load == loads_.end() ? nullptr : &load->second, now));
      counters_[d.uuid].add(out.back());
    }
    return out;
  }
  void set_synthetic_load(const std::string& uuid, std::optional<SyntheticLoad> load) override
      TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    if (load) {
      loads_[uuid] = std::move(*load);
    } else {
      loads_.erase(uuid);
    }
  }
  std::string_view kind() const override { return "synthetic"; }

 private:
  const std::vector<GpuDevice> devices_;
  util::Mutex mu_;
  std::map<std::string, SyntheticLoad> loads_ TY_GUARDED_BY(mu_);         // by device uuid
  std::map<std::string, SyntheticCounters> counters_ TY_GUARDED_BY(mu_);  // by device uuid
};

util::Status entry_error(std::string_view spec, std::string_view entry, std::string_view what) {
  return util::invalid_argument(
      fmt::format("GPU spec '{}': entry '{}': {} ({})", spec, entry, what, kExample));
}

std::string mig_models() {
  std::string out;
  for (const auto& a : model::accelerator_catalog()) {
    if (!a.mig_profiles.empty()) out += (out.empty() ? "" : ", ") + std::string(a.name);
  }
  return out;
}

// One "<count>x<model>[:mig]" entry; appends its GPUs to `out`.
util::Status parse_entry(std::string_view spec, std::string_view entry,
                         std::vector<GpuDevice>& out) {
  std::string_view body = entry;
  bool mig = false;
  if (size_t colon = body.find(':'); colon != std::string_view::npos) {
    if (body.substr(colon + 1) != "mig") {
      return entry_error(spec, entry, "the only option after ':' is 'mig'");
    }
    mig = true;
    body = body.substr(0, colon);
  }
  size_t x = 0;
  while (x < body.size() && body[x] >= '0' && body[x] <= '9') ++x;
  if (x == 0 || x == body.size() || (body[x] != 'x' && body[x] != 'X')) {
    return entry_error(spec, entry, "expected <count>x<model>");
  }
  int count = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + x, count);
  if (ec != std::errc() || count < 1 || count > kMaxGpusPerEntry) {
    return entry_error(spec, entry, fmt::format("count must be 1..{}", kMaxGpusPerEntry));
  }
  std::string_view model_name = body.substr(x + 1);
  const model::Accelerator* a = model::find_accelerator(model_name);
  if (!a) {
    return entry_error(
        spec, entry, fmt::format("unknown GPU model '{}' (see docs/accelerators.md)", model_name));
  }
  if (mig && a->mig_profiles.empty()) {
    return entry_error(spec, entry,
                       fmt::format("{} has no MIG; models with MIG: {}", a->name, mig_models()));
  }
  for (int i = 0; i < count; ++i) {
    int index = static_cast<int>(out.size());
    out.push_back(GpuDevice{
        .index = index,
        .uuid = fmt::format("GPU-sim-{}-{}", index, a->name),
        .name = fmt::format("Simulated {}", a->name),
        .model = std::string(a->name),
        .memory = a->memory,
        .mig_enabled = mig,
        .mig_instances = {},
        .simulated = true,
    });
  }
  return util::Status::ok();
}

}  // namespace

util::Result<GpuSamplerPtr> make_synthetic_sampler(std::string_view spec) {
  if (!spec.starts_with(kSimPrefix)) {
    return util::invalid_argument(
        fmt::format("GPU spec '{}': a synthetic spec starts with 'sim:' ({})", spec, kExample));
  }
  std::string_view rest = spec.substr(kSimPrefix.size());
  if (rest.empty()) {
    return util::invalid_argument(
        fmt::format("GPU spec '{}': no GPUs listed after 'sim:' ({})", spec, kExample));
  }
  std::vector<GpuDevice> devices;
  while (true) {
    size_t comma = rest.find(',');
    TY_RETURN_IF_ERROR(parse_entry(spec, rest.substr(0, comma), devices));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return GpuSamplerPtr(std::make_unique<SyntheticSampler>(std::move(devices)));
}

}  // namespace trainyard::telemetry
