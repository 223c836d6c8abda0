#include "cloud/throughput.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "model/accelerator.h"
#include "util/read_file.h"

namespace trainyard::cloud {
namespace {

// Gavel's GPU keys and the catalog models they measured.
constexpr std::pair<std::string_view, std::string_view> kGavelGpus[] = {
    {"k80", "K80"}, {"p100", "P100"}, {"v100", "V100-16GB"}};

// "('ResNet-50 (batch size 64)', 1)" → {"ResNet-50 (batch size 64)", 1}; scale 0 if malformed.
std::pair<std::string, int> parse_job_key(std::string_view key) {
  const size_t sep = key.rfind("', ");
  if (!key.starts_with("('") || sep == std::string_view::npos || !key.ends_with(")")) {
    return {"", 0};
  }
  const std::string scale(key.substr(sep + 3, key.size() - sep - 4));
  return {std::string(key.substr(2, sep - 2)), std::atoi(scale.c_str())};
}

// Datasheet speed-up over a V100-16GB for models Gavel did not measure: the geometric mean of
// the dense fp16 tensor and memory-bandwidth ratios, since training steps are partly compute-
// and partly memory-bound. Gives A100-80GB ≈ 2.4× and H100 ≈ 5.4×.
double datasheet_speedup(const model::Accelerator& a, const model::Accelerator& ref) {
  return std::sqrt((a.fp16_tflops / ref.fp16_tflops) * (a.memory_bw_gbps / ref.memory_bw_gbps));
}

}  // namespace

util::Result<ThroughputTable> ThroughputTable::parse_gavel(std::string_view json,
                                                           const std::string& name) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    return util::invalid_argument(name + ": not valid JSON (" + e.what() + ")");
  }
  ThroughputTable table;
  for (const auto& [gavel_key, accel] : kGavelGpus) {
    auto gpu = doc.find(std::string(gavel_key));
    if (gpu == doc.end() || !gpu->is_object()) {
      return util::invalid_argument(name + ": missing object \"" + std::string(gavel_key) +
                                    "\" (expected Gavel's simulation_throughputs.json)");
    }
    for (const auto& [key, entry] : gpu->items()) {
      auto [job, scale] = parse_job_key(key);
      if (scale != 1) continue;  // multi-GPU entries: per-GPU scaling is not modelled here
      auto iso = entry.find("null");
      if (iso == entry.end() || !iso->is_number() || iso->get<double>() <= 0) {
        return util::invalid_argument(name + ": " + std::string(gavel_key) + "[\"" + key +
                                      "\"].null must be a positive steps/s number");
      }
      table.steps_[job][std::string(accel)] = iso->get<double>();
    }
  }
  return table;
}

util::Result<ThroughputTable> ThroughputTable::load_gavel(const std::string& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path));
  return parse_gavel(text, path);
}

ThroughputTable ThroughputTable::from_measurements(
    std::map<std::string, std::map<std::string, double>> steps_per_second) {
  ThroughputTable t;
  for (auto& [job, by_accel] : steps_per_second) t.steps_[job] = std::move(by_accel);
  return t;
}

std::vector<std::string> ThroughputTable::job_types() const {
  std::vector<std::string> out;
  for (const auto& [job, unused] : steps_) out.push_back(job);
  return out;
}

util::Result<RelativeThroughput> ThroughputTable::relative(std::string_view job_type,
                                                           std::string_view accelerator) const {
  auto job = steps_.find(job_type);
  if (job == steps_.end()) {
    std::string known;
    for (const auto& [name, unused] : steps_) known += (known.empty() ? "" : "; ") + name;
    return util::not_found("unknown job type '" + std::string(job_type) + "' (known: " + known +
                           ")");
  }
  const auto& by_accel = job->second;
  auto ref = by_accel.find(std::string(kReferenceAccelerator));
  if (ref == by_accel.end()) {
    return util::failed_precondition("job type '" + std::string(job_type) + "' has no " +
                                     std::string(kReferenceAccelerator) + " measurement");
  }
  // V100-32GB is the same chip with more memory: same steps/s.
  const std::string accel =
      accelerator == "V100-32GB" ? std::string(kReferenceAccelerator) : std::string(accelerator);
  if (auto it = by_accel.find(accel); it != by_accel.end()) {
    return RelativeThroughput{.per_gpu = it->second / ref->second, .estimated = false};
  }
  const model::Accelerator* a = model::find_accelerator(accelerator);
  const model::Accelerator* r = model::find_accelerator(kReferenceAccelerator);
  if (a == nullptr || r == nullptr) {
    return util::not_found("accelerator '" + std::string(accelerator) +
                           "' is neither measured nor in the accelerator catalog");
  }
  return RelativeThroughput{.per_gpu = datasheet_speedup(*a, *r), .estimated = true};
}

}  // namespace trainyard::cloud
