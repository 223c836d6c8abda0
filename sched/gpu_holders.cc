#include "sched/gpu_holders.h"

#include <algorithm>
#include <bit>
#include <set>

#include <fmt/format.h>

#include "sched/internal/node_filter.h"

namespace trainyard::sched {
namespace {

// Nodes `job` could ever use: schedulable, and passing every filter but free capacity.
std::vector<bool> usable_nodes(const Snapshot& snap, const SnapshotJob& job) {
  std::vector<bool> ok(snap.nodes.size(), false);
  for (size_t idx = 0; idx < snap.nodes.size(); ++idx) {
    ok[idx] = snap.nodes[idx].schedulable &&
              internal::static_mismatch(job, snap, static_cast<int>(idx), {}) == 0;
  }
  return ok;
}

// The one GPU model the job can get, by its request or because every node it could use has it;
// "" when several would do.
std::string only_model(const Snapshot& snap, const SnapshotJob& job) {
  int model = -1;
  const std::vector<bool> usable = usable_nodes(snap, job);
  for (size_t idx = 0; idx < snap.nodes.size(); ++idx) {
    if (!usable[idx] || snap.nodes[idx].gpu_model < 0) continue;
    if (model >= 0 && model != snap.nodes[idx].gpu_model) return "";
    model = snap.nodes[idx].gpu_model;
  }
  return model >= 0 ? snap.gpu_models[model] : "";
}

// What decides a job's holders and its reason's text: its request, allowed models and selector.
std::string shape_key(const SnapshotJob& job) {
  const model::WorkerRequest& w = job.worker;
  std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", job.workers, w.gpus, w.gpu_milli.value(),
                                w.cpu.value(), w.memory.value(), job.gpu_model_mask,
                                job.preemptible, w.mig_profile);
  for (const auto& [k, v] : job.node_selector) key += "|" + k + "=" + v;
  return key;
}

std::string holder_text(const Snapshot& snap, const GpuHolder& h) {
  const std::string team = h.team >= 0 && h.team < static_cast<int>(snap.teams.size())
                               ? "team " + snap.teams[h.team].name + ", "
                               : "";
  std::string end;
  if (h.stopping) {
    end = "being preempted";
  } else if (h.ends == Time::max()) {
    end = "no runtime limit";
  } else {
    end = "limit ends in " + format_span(h.ends - snap.now);
  }
  return fmt::format("job {} ({}{} GPU{}, {})", h.job.value(), team, h.gpus, h.gpus == 1 ? "" : "s",
                     end);
}

}  // namespace

Time expected_end(const SnapshotJob& job, Time now) {
  if (job.phase == JobPhase::Preempting) return now;
  Time end = Time::max();
  if (job.runtime_limit.count() > 0) end = std::max(now, job.started + job.runtime_limit);
  if (job.remaining != kUnknownDuration) end = std::min(end, now + job.remaining);
  return end;
}

std::string format_span(Duration d) {
  const int64_t s =
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(d).count());
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m", (s + 30) / 60);
  if (s < 86400) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02d}h", s / 86400, (s % 86400) / 3600);
}

std::string request_text(const Snapshot& snap, const SnapshotJob& job) {
  const model::WorkerRequest& w = job.worker;
  if (!w.mig_profile.empty()) return fmt::format("{} x MIG {}", job.workers, w.mig_profile);
  const std::string model = only_model(snap, job);
  const std::string of = model.empty() ? "GPU(s)" : model;
  if (w.gpus > 0) {
    if (job.workers == 1) return fmt::format("{} x {}", w.gpus, of);
    return fmt::format("{} workers x {} {}", job.workers, w.gpus, of);
  }
  if (w.gpu_milli.value() > 0)
    return fmt::format("{} x {:.2f} {}", job.workers,
                       static_cast<double>(w.gpu_milli.value()) / 1000.0, of);
  return "CPU and memory";
}

bool waits_for_gpus(const WaitReason& r) {
  switch (r.code) {
    case WaitCode::NoCapacityNow:
    case WaitCode::BackfillWouldDelay:
      return r.filter == 0 || r.filter == kFilterGpus;
    default:
      return false;
  }
}

GpuHolders::GpuHolders(const Snapshot& snap, const Plan& plan)
    : snap_(snap), by_node_(snap.nodes.size()) {
  for (size_t idx = 0; idx < snap.jobs.size(); ++idx)
    job_index_[snap.jobs[idx].id.value()] = static_cast<int>(idx);
  auto add = [&](const SnapshotJob& j, const std::vector<Assignment>& placement, Time ends) {
    Entry e{.holder = {.job = j.id,
                       .team = j.team,
                       .ends = ends,
                       .stopping = j.phase == JobPhase::Preempting}};
    for (const Assignment& a : placement) {
      if (a.gpu_idx >= 0) e.nodes.push_back(a.node_idx);
    }
    if (e.nodes.empty()) return;
    const int at = static_cast<int>(entries_.size());
    for (int node : std::set<int>(e.nodes.begin(), e.nodes.end())) by_node_[node].push_back(at);
    entries_.push_back(std::move(e));
  };
  for (const SnapshotJob& j : snap.jobs) {
    if (j.is_running()) add(j, j.placement, expected_end(j, snap.now));
  }
  for (const StartAction& s : plan.starts) {
    auto it = job_index_.find(s.job.value());
    if (it == job_index_.end()) continue;
    SnapshotJob started = snap.jobs[it->second];
    started.phase = JobPhase::Running;
    started.started = snap.now;
    add(started, s.placement, expected_end(started, snap.now));
  }
}

const std::vector<GpuHolder>& GpuHolders::of(const SnapshotJob& job) {
  const std::string key = shape_key(job);
  if (auto it = of_memo_.find(key); it != of_memo_.end()) return it->second;
  const std::vector<bool> usable = usable_nodes(snap_, job);
  std::vector<int> gpus(entries_.size(), 0);
  for (size_t e = 0; e < entries_.size(); ++e) {
    for (int node : entries_[e].nodes) gpus[e] += usable[node] ? 1 : 0;
  }
  std::vector<GpuHolder> out;
  for (size_t e = 0; e < entries_.size(); ++e) {
    if (gpus[e] == 0) continue;
    out.push_back(entries_[e].holder);
    out.back().gpus = gpus[e];
  }
  std::sort(out.begin(), out.end(), [](const GpuHolder& a, const GpuHolder& b) {
    const Time ea = a.stopping ? Time::min() : a.ends;
    const Time eb = b.stopping ? Time::min() : b.ends;
    return ea != eb ? ea < eb : a.job < b.job;
  });
  return of_memo_[key] = std::move(out);
}

std::string GpuHolders::describe(JobId id, size_t max_named) {
  auto it = job_index_.find(id.value());
  if (it == job_index_.end()) return "";
  const SnapshotJob& job = snap_.jobs[it->second];
  const std::string key = fmt::format("{}#{}", shape_key(job), max_named);
  if (auto memo = text_memo_.find(key); memo != text_memo_.end()) return memo->second;
  const std::vector<GpuHolder>& holders = of(job);
  const std::vector<bool> usable = usable_nodes(snap_, job);
  int outside = 0;
  for (size_t idx = 0; idx < snap_.nodes.size(); ++idx) {
    if (usable[idx]) outside += std::popcount(snap_.nodes[idx].gpus_held_outside);
  }
  if (holders.empty() && outside == 0) return text_memo_[key] = "";
  std::string named;
  for (size_t h = 0; h < holders.size() && h < max_named; ++h)
    named += (named.empty() ? "" : ", ") + holder_text(snap_, holders[h]);
  if (holders.size() > max_named)
    named += fmt::format(" and {} more job(s)", holders.size() - max_named);
  std::string text = fmt::format("waiting for {}: ", request_text(snap_, job));
  if (!named.empty()) text += "held by " + named;
  if (outside > 0)
    text += fmt::format("{}{} GPU(s) used outside trainyard", named.empty() ? "" : "; ", outside);
  return text_memo_[key] = std::move(text);
}

}  // namespace trainyard::sched
