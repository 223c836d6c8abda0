#include "server/batch_gpu_sampler.h"

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "telemetry/gpu_sample_json.h"
#include "util/read_file.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

void BatchGpuSampler::set_workers(std::vector<BatchWorkerGpus> workers) {
  util::MutexLock lock(mu_);
  workers_ = std::move(workers);
}

util::Result<std::vector<telemetry::GpuSample>> BatchGpuSampler::sample(util::Time now) {
  std::vector<BatchWorkerGpus> workers;
  {
    util::MutexLock lock(mu_);
    workers = workers_;
  }
  std::vector<telemetry::GpuSample> out;
  for (const auto& w : workers) {
    const auto text = util::read_file(w.run_dir / exec::kGpuSamplesFile);
    if (!text.is_ok()) continue;
    const auto doc = nlohmann::json::parse(*text, nullptr, false);
    if (!doc.is_object() || !doc.contains("samples") || !doc["samples"].is_array()) continue;
    const util::Time taken = util::from_millis(doc.value("time_ms", int64_t{0}));
    if (now - taken > stale_after_) continue;
    size_t k = 0;
    for (const auto& j : doc["samples"]) {
      if (k >= w.slots.size()) break;
      auto s = telemetry::sample_from_json(j);
      if (!s.is_ok()) continue;
      // The reading keeps the card's own identity in name/model/pci; its uuid becomes the slot
      // the scheduler gave this worker, which is what placements and the job's rows name.
      s->uuid = w.slots[k];
      s->index = k < w.slot_index.size() ? w.slot_index[k] : static_cast<int>(k);
      s->host = w.node;
      s->time = now;
      s->processes.clear();  // pids of another machine mean nothing here
      out.push_back(std::move(*s));
      ++k;
    }
  }
  return out;
}

}  // namespace trainyard::server
