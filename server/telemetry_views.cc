// ControlPlane's telemetry: who runs on which device (for the recorder), the GPU and job views of
// the API, the job's samples for the doctor, and the /metrics exposition.
#include <algorithm>
#include <set>

#include "exec/executor.h"
#include "model/accelerator.h"
#include "model/api_telemetry_views.h"
#include "server/control_plane.h"
#include "server/process_info.h"
#include "server/telemetry_open_minutes.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

using nlohmann::json;

constexpr const char* kProfileLabel = "trainyard.dev/sim-gpu-profile";
constexpr model::JobState kStates[] = {model::JobState::Pending,    model::JobState::Admitted,
                                       model::JobState::Placed,     model::JobState::Running,
                                       model::JobState::Preempting, model::JobState::Succeeded,
                                       model::JobState::Failed,     model::JobState::Cancelled};

// The measurements of a sample; identity fields are added by the callers that need them.
model::GpuMeasurementsView measurements_view(const telemetry::GpuSample& s) {
  return {.time = util::format_time_ms(s.time),
          .gpu_util_percent = s.gpu_util_percent,
          .mem_util_percent = s.mem_util_percent,
          .sm_active_percent = s.sm_active_percent,
          .tensor_active_percent = s.tensor_active_percent,
          .dram_active_percent = s.dram_active_percent,
          .gr_engine_active_percent = s.gr_engine_active_percent,
          .memory_temperature_c = s.memory_temperature_c,
          .energy_millijoules = s.energy_mj,
          .memory_used_bytes = s.memory_used_bytes,
          .memory_total_bytes = s.memory_total_bytes,
          .temperature_c = s.temperature_c,
          .slowdown_temperature_c = s.slowdown_temperature_c,
          .power_w = s.power_w,
          .power_limit_w = s.power_limit_w,
          .sm_clock_mhz = s.sm_clock_mhz,
          .mem_clock_mhz = s.mem_clock_mhz,
          .throttle_reasons = s.throttle_reasons,
          .ecc_corrected_volatile = s.ecc_corrected_volatile,
          .ecc_uncorrected_volatile = s.ecc_uncorrected_volatile,
          .last_xid = s.last_xid,
          .xid_count = s.xid_count,
          .pcie_tx_bytes_per_second = s.pcie_tx_bytes_per_s,
          .pcie_rx_bytes_per_second = s.pcie_rx_bytes_per_s,
          .nvlink_tx_bytes_per_second = s.nvlink_tx_bytes_per_s,
          .nvlink_rx_bytes_per_second = s.nvlink_rx_bytes_per_s};
}

model::TelemetryMinuteView minute_view(const store::TelemetryMinute& m, bool partial) {
  return {.device = m.device_uuid,
          .minute = util::format_time_ms(m.minute),
          .samples = m.samples,
          .gpu_util_avg = m.gpu_util_avg,
          .gpu_util_max = m.gpu_util_max,
          .mem_util_avg = m.mem_util_avg,
          .sm_active_avg = m.sm_active_avg,
          .tensor_active_avg = m.tensor_active_avg,
          .memory_used_avg_bytes = m.mem_used_avg,
          .memory_used_max_bytes = m.mem_used_max,
          .memory_total_bytes = m.mem_total,
          .temperature_avg_c = m.temp_avg,
          .temperature_max_c = m.temp_max,
          .power_avg_w = m.power_avg,
          .power_max_w = m.power_max,
          .sm_clock_avg_mhz = m.sm_clock_avg,
          .throttle_reasons = m.throttle_or,
          .ecc_uncorrected_max = m.ecc_uncorrected_max,
          .last_xid = m.xid_last,
          .partial = partial};
}

// Weighted values: a stored minute weighs as many samples as it summarizes.
struct Weighted {
  std::vector<std::pair<double, double>> points;  // value, weight
  void add(std::optional<double> v, double w) {
    if (v && w > 0) points.emplace_back(*v, w);
  }
  std::optional<double> mean() const {
    double sum = 0, weight = 0;
    for (const auto& [v, w] : points) sum += v * w, weight += w;
    return weight > 0 ? std::optional<double>(sum / weight) : std::nullopt;
  }
  std::optional<double> percentile(double p) {
    if (points.empty()) return std::nullopt;
    std::sort(points.begin(), points.end());
    double total = 0;
    for (const auto& pt : points) total += pt.second;
    double seen = 0;
    for (const auto& [v, w] : points) {
      seen += w;
      if (seen >= p * total) return v;
    }
    return points.back().first;
  }
};

std::optional<double> max_of(std::optional<double> a, std::optional<double> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

std::optional<double> as_double(std::optional<uint64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}
std::optional<double> as_double(std::optional<int64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

// What utilization_summary() adds up over a job's stored minutes and its recent raw samples.
struct UtilizationTotals {
  Weighted util, power, sm_active, tensor_active;
  std::optional<double> util_max, mem_max, mem_total, temp_max;
  std::optional<int64_t> throttle, xid;
  std::set<std::string> devices;
  int64_t samples = 0;
  std::optional<util::Time> first, last;

  void span(util::Time t) {
    first = first ? std::min(*first, t) : t;
    last = last ? std::max(*last, t) : t;
  }

  void add(const store::TelemetryMinute& m) {
    const double w = static_cast<double>(m.samples);
    samples += m.samples;
    devices.insert(m.device_uuid);
    span(m.minute);
    util.add(m.gpu_util_avg, w);
    power.add(m.power_avg, w);
    sm_active.add(m.sm_active_avg, w);
    tensor_active.add(m.tensor_active_avg, w);
    util_max = max_of(util_max, m.gpu_util_max);
    mem_max = max_of(mem_max, as_double(m.mem_used_max));
    mem_total = max_of(mem_total, as_double(m.mem_total));
    temp_max = max_of(temp_max, m.temp_max);
    if (m.throttle_or) throttle = throttle.value_or(0) | *m.throttle_or;
    if (m.xid_last) xid = m.xid_last;
  }

  void add(const telemetry::GpuSample& s) {
    samples += 1;
    devices.insert(s.uuid);
    span(s.time);
    util.add(s.gpu_util_percent, 1);
    power.add(s.power_w, 1);
    sm_active.add(s.sm_active_percent, 1);
    tensor_active.add(s.tensor_active_percent, 1);
    util_max = max_of(util_max, s.gpu_util_percent);
    mem_max = max_of(mem_max, as_double(s.memory_used_bytes));
    mem_total = max_of(mem_total, as_double(s.memory_total_bytes));
    temp_max = max_of(temp_max, s.temperature_c);
    if (s.throttle_reasons)
      throttle = throttle.value_or(0) | static_cast<int64_t>(*s.throttle_reasons);
    if (s.last_xid) xid = *s.last_xid;
  }

  static std::optional<std::string> time_at(std::optional<util::Time> t) {
    if (!t) return std::nullopt;
    return util::format_time_ms(*t);
  }

  model::UtilizationView view() {
    return model::UtilizationView{.samples = samples,
                                  .devices = static_cast<int64_t>(devices.size()),
                                  .from = time_at(first),
                                  .to = time_at(last),
                                  .gpu_util_avg = util.mean(),
                                  .gpu_util_p95 = util.percentile(0.95),
                                  .gpu_util_max = util_max,
                                  .sm_active_avg = sm_active.mean(),
                                  .tensor_active_avg = tensor_active.mean(),
                                  .memory_used_max_bytes = mem_max,
                                  .memory_total_bytes = mem_total,
                                  .temperature_max_c = temp_max,
                                  .power_avg_w = power.mean(),
                                  .throttle_reasons = throttle,
                                  .last_xid = xid};
  }
};

// The processes on a device; user and command line only to those who may see the job's team
// (admins see every process's, also of processes outside any job), and only for this machine.
std::vector<model::GpuProcessView> gpu_processes(const AttributedSample& a, const Principal& who) {
  std::vector<model::GpuProcessView> procs;
  for (const auto& p : a.sample.processes) {
    auto pj = a.process_job.find(p.pid);
    model::GpuProcessView& e = procs.emplace_back(model::GpuProcessView{
        .pid = p.pid, .memory_bytes = p.memory_bytes, .sm_util_percent = p.sm_util_percent});
    if (pj != a.process_job.end()) e.job = pj->second;
    bool visible = who.admin;
    for (const auto& j : a.jobs)
      if (pj != a.process_job.end() && j.id == pj->second) visible = who.may_access_team(j.team);
    if (visible && a.sample.host.empty()) {
      if (auto info = describe_local_process(p.pid)) {
        e.user = info->user;
        e.command = info->command;
      }
    }
  }
  return procs;
}

// A device of GET /api/v1/gpus. Job names are a team's own business; ids and teams are public
// like in `nodes`.
model::GpuDeviceView gpu_device(const AttributedSample& a, const Principal& who) {
  const auto& s = a.sample;
  model::GpuDeviceView d{.index = s.index,
                         .uuid = s.uuid,
                         .name = s.name,
                         .model = s.model,
                         .pci_bus_id = s.pci_bus_id,
                         .mig = s.is_mig,
                         .mig_profile = s.mig_profile,
                         .gpu_instance_id = s.gpu_instance_id,
                         .measurements = measurements_view(s)};
  for (const auto& j : a.jobs) {
    d.jobs.push_back({.id = j.id,
                      .team = j.team,
                      .name = who.may_access_team(j.team) ? std::optional(j.name) : std::nullopt});
  }
  d.processes = gpu_processes(a, who);
  return d;
}

}  // namespace

TelemetryPlacements ControlPlane::telemetry_placements() const {
  TelemetryPlacements p;
  for (const auto& [id, job] : jobs_.active()) {
    if (job.workers.empty()) continue;
    const JobRef ref{.id = id.value(), .name = job.rec.name, .team = job.rec.team};
    for (const auto& w : job.workers)
      if (w.ref.pid > 0 && w.ref.batch_job == 0 && !w.finished) p.by_session[w.ref.pid] = ref;
    auto profile = job.manifest.labels.find(kProfileLabel);
    for (const auto& a : job.placement) {
      const std::string uuid = device_uuid(a);
      if (uuid.empty()) continue;
      auto& jobs = p.by_device[uuid];
      if (std::find(jobs.begin(), jobs.end(), ref) == jobs.end()) jobs.push_back(ref);
      if (a.mig_profile >= 0) p.parent_of[uuid] = nodes_.of(a).gpus[a.gpu_idx].uuid;
      if (p.loads.contains(uuid)) continue;  // a shared GPU runs the first job's load
      telemetry::SyntheticLoad load{
          .job_id = std::to_string(id.value()),
          .profile = profile != job.manifest.labels.end() ? profile->second : "healthy",
          .start = job.rec.started};
      for (const auto& w : job.workers) {
        if (w.rank != a.worker || w.ref.pid <= 0 || w.ref.batch_job != 0 || w.finished) continue;
        // The processes the wrapper started hold the GPU (NVML reports those), not the wrapper.
        const std::vector<int> workers = child_processes(w.ref.pid);
        if (workers.empty()) load.pids.push_back(w.ref.pid);
        load.pids.insert(load.pids.end(), workers.begin(), workers.end());
      }
      p.loads[uuid] = std::move(load);
      p.metrics_files[uuid] =
          (run_dir(id, job.rec.attempt, a.worker) / exec::kMetricsFile).string();
    }
  }
  return p;
}

std::vector<BatchWorkerGpus> ControlPlane::batch_worker_gpus() const {
  std::vector<BatchWorkerGpus> out;
  for (const auto& [id, job] : jobs_.active()) {
    for (const auto& w : job.workers) {
      if (w.finished || w.ref.batch_job == 0) continue;
      BatchWorkerGpus g{.run_dir = w.run_dir};
      for (const auto& a : job.placement) {
        if (a.worker != w.rank || a.gpu_idx < 0) continue;
        if (!nodes_.of(a).batch) continue;
        g.node = nodes_.of(a).node.name;
        g.slots.push_back(device_uuid(a));
        g.slot_index.push_back(a.gpu_idx);
      }
      if (!g.slots.empty()) out.push_back(std::move(g));
    }
  }
  return out;
}

json ControlPlane::gpus(const Principal& who) const {
  model::GpuListView out;
  if (recorder_) {
    for (const auto& a : recorder_->latest()) out.items.push_back(gpu_device(a, who));
    out.interval_seconds = util::to_seconds(recorder_->interval());
  }
  return model::to_json(out);
}

util::Result<ControlPlane::JobSeries> ControlPlane::job_series(util::JobId id) {
  TY_RETURN_IF_ERROR(load_record(id).status());  // NotFound for a job that does not exist
  JobSeries series;
  {
    util::MutexLock lock(reader_mu_);
    TY_ASSIGN_OR_RETURN(series.minutes, reader_->job_telemetry(id));
  }
  util::Time since{};  // after the last stored minute
  for (const auto& m : series.minutes) since = std::max(since, m.minute + std::chrono::minutes(1));
  if (recorder_) series.recent = recorder_->recent_for_job(id.value(), since);
  return series;
}

util::Result<std::vector<telemetry::GpuSample>> ControlPlane::job_samples(util::JobId id) {
  TY_ASSIGN_OR_RETURN(JobSeries series, job_series(id));
  std::map<std::string, telemetry::GpuSample> identity;
  if (recorder_)
    for (auto& a : recorder_->latest()) identity[a.sample.uuid] = std::move(a.sample);
  std::vector<telemetry::GpuSample> out;
  for (const auto& m : series.minutes) {
    telemetry::GpuSample s;
    if (auto it = identity.find(m.device_uuid); it != identity.end()) {
      s.index = it->second.index;
      s.name = it->second.name;
      s.model = it->second.model;
      s.pci_bus_id = it->second.pci_bus_id;
      s.is_mig = it->second.is_mig;
      s.gpu_instance_id = it->second.gpu_instance_id;
      s.mig_profile = it->second.mig_profile;
    }
    s.time = m.minute;
    s.uuid = m.device_uuid;
    s.gpu_util_percent = m.gpu_util_avg;
    s.mem_util_percent = m.mem_util_avg;
    s.sm_active_percent = m.sm_active_avg;
    s.tensor_active_percent = m.tensor_active_avg;
    if (m.mem_used_avg) s.memory_used_bytes = static_cast<uint64_t>(*m.mem_used_avg);
    if (m.mem_total) s.memory_total_bytes = static_cast<uint64_t>(*m.mem_total);
    s.temperature_c = m.temp_avg;
    s.power_w = m.power_avg;
    s.sm_clock_mhz = m.sm_clock_avg;
    if (m.throttle_or) s.throttle_reasons = static_cast<uint64_t>(*m.throttle_or);
    if (m.ecc_uncorrected_max)
      s.ecc_uncorrected_volatile = static_cast<uint64_t>(*m.ecc_uncorrected_max);
    if (m.xid_last) s.last_xid = static_cast<int>(*m.xid_last);
    out.push_back(std::move(s));
  }
  for (auto& s : series.recent) out.push_back(std::move(s));
  return out;
}

model::UtilizationView ControlPlane::utilization_summary(const JobSeries& series) const {
  UtilizationTotals totals;
  for (const auto& m : series.minutes) totals.add(m);
  for (const auto& s : series.recent) totals.add(s);
  return totals.view();
}

util::Result<json> ControlPlane::job_telemetry(util::JobId id, int max_samples,
                                               const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, id, rec.team));
  TY_ASSIGN_OR_RETURN(JobSeries series, job_series(id));
  model::JobTelemetryView out{.job = id.value(), .summary = utilization_summary(series)};
  if (recorder_) out.interval_seconds = util::to_seconds(recorder_->interval());
  for (const auto& m : series.minutes) out.minutes.push_back(minute_view(m, false));
  // Minutes not stored yet (the one in progress) from the raw samples, marked partial.
  for (const auto& m : summarize_minutes(series.recent))
    out.minutes.push_back(minute_view(m, true));
  // The newest raw samples, also those already summarized in a stored minute.
  std::vector<telemetry::GpuSample> raw;
  if (recorder_) raw = recorder_->recent_for_job(id.value(), util::Time{});
  const size_t keep = std::min(raw.size(), static_cast<size_t>(std::max(0, max_samples)));
  for (size_t i = raw.size() - keep; i < raw.size(); ++i)
    out.samples.push_back({.device = raw[i].uuid, .measurements = measurements_view(raw[i])});
  return model::to_json(out);
}

std::string ControlPlane::metrics_text() const {
  ExpositionWriter w;
  if (recorder_) {
    // A device the sampler stopped answering for is left out rather than shown frozen.
    const util::Time now = clock_.now();
    const util::Duration max_age =
        std::max<util::Duration>(util::seconds(10), 5 * recorder_->interval());
    std::vector<AttributedSample> fresh;
    for (auto& a : recorder_->latest())
      if (now - a.sample.time <= max_age) fresh.push_back(std::move(a));
    write_gpu_metrics(w, fresh, hostname_);
  }
  ClusterCounts counts;
  for (auto state : kStates) counts.jobs_by_state[std::string(model::job_state_name(state))] = 0;
  {
    util::MutexLock lock(mu_);
    for (const auto& n : nodes_) {
      if (n.node.gpu_count == 0) continue;
      counts.gpus.push_back({.node = n.node.name,
                             .model = n.node.gpu_model,
                             .total = static_cast<double>(n.node.gpu_count)});
    }
    for (const auto& [id, job] : jobs_.active()) {
      counts.jobs_by_state[std::string(model::job_state_name(job.rec.state))] += 1;
      for (const auto& a : job.placement) {
        if (a.gpu_idx < 0) continue;
        const LocalNode& node = nodes_.of(a);
        double share = a.milli / 1000.0;
        if (a.mig_profile >= 0) {
          const auto* acc = model::find_accelerator(node.node.gpu_model);
          share = acc != nullptr && a.mig_profile < static_cast<int>(acc->mig_profiles.size())
                      ? model::mig_gpu_fraction(acc->mig_profiles[a.mig_profile].compute_slices)
                      : 0.0;
        }
        for (auto& p : counts.gpus)
          if (p.node == node.node.name) p.allocated += share;
      }
    }
  }
  {
    util::MutexLock lock(reader_mu_);
    for (auto state : kStates) {
      if (!model::is_terminal(state)) continue;
      auto n = reader_->count_jobs({.state = state});
      if (n.is_ok()) counts.jobs_by_state[std::string(model::job_state_name(state))] = *n;
    }
  }
  if (alerts_) counts.alerts_firing = alerts_->firing_counts();
  write_server_metrics(w, counts, metrics_);
  return w.text();
}

}  // namespace trainyard::server
