#include "server/telemetry_recorder.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "exec/checkpoint_reader.h"
#include "util/log.h"
#include "util/thread_annotations.h"

namespace trainyard::server {
namespace {

// Step metrics change slowly and live in files: reading them every sample would be waste.
constexpr util::Duration kDataWaitRefresh = util::seconds(10);

bool same_load(const telemetry::SyntheticLoad& a, const telemetry::SyntheticLoad& b) {
  return a.job_id == b.job_id && a.profile == b.profile && a.start == b.start && a.pids == b.pids &&
         a.data_wait_fraction == b.data_wait_fraction && a.dtype == b.dtype;
}

// What the job's last metrics line says about its load: the share of a step spent waiting for
// input, and the dtype it trains in ("" when it does not say).
struct StepFacts {
  std::optional<double> data_wait_fraction;
  std::string dtype;
};

StepFacts step_facts(const std::string& metrics_file) {
  const auto tail = exec::read_metrics_tail(metrics_file);
  if (!tail || !tail->last.is_object()) return {};
  const auto& last = tail->last;
  StepFacts facts;
  if (last.contains("dtype") && last["dtype"].is_string())
    facts.dtype = last["dtype"].get<std::string>();
  if (!last.contains("data_wait_s") || !last.contains("step_time_s") ||
      !last["data_wait_s"].is_number() || !last["step_time_s"].is_number())
    return facts;
  const double step = last["step_time_s"].get<double>();
  const double wait = last["data_wait_s"].get<double>();
  if (step > 0 && wait >= 0) facts.data_wait_fraction = std::min(1.0, wait / step);
  return facts;
}

}  // namespace

std::optional<int> session_of_pid(int pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return std::nullopt;
  // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0;
  if (!(rest >> state >> ppid >> pgrp >> session) || session <= 0) return std::nullopt;
  return static_cast<int>(session);
}

TelemetryRecorder::TelemetryRecorder(telemetry::GpuSampler& sampler, const util::Clock& clock,
                                     TelemetryRecorderOptions options)
    : sampler_(sampler), clock_(clock), options_(std::move(options)) {}

TelemetryRecorder::~TelemetryRecorder() {
  stop();
}

void TelemetryRecorder::start() {
  util::MutexLock thread_lock(thread_mu_);
  if (thread_.joinable()) return;
  {
    util::MutexLock lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] {
    std::string last_error;
    for (;;) {
      const util::Status st = record_once(clock_.now());
      // A failing sampler fails every interval: say so once per distinct reason, not per second.
      if (!st.is_ok() && st.message() != last_error) TY_LOG_WARN("telemetry: {}", st.message());
      last_error = st.is_ok() ? "" : st.message();
      util::UniqueLock lock(mu_);
      // Waiting on a condition variable needs a duration, not a date (see ControlPlane): the
      // steady clock counts the interval down across wake-ups that were not stop().
      const util::Duration until = util::WallClock::steady_now() + options_.interval;
      while (!stopping_ &&
             lock.wait_for(cv_, until - util::WallClock::steady_now()) != std::cv_status::timeout) {
      }
      if (stopping_) return;
    }
  });
}

void TelemetryRecorder::stop() {
  util::MutexLock thread_lock(thread_mu_);
  if (!thread_.joinable()) return;
  {
    util::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (auto st = flush(); !st.is_ok()) TY_LOG_WARN("telemetry: {}", st.message());
}

AttributedSample TelemetryRecorder::attribute(telemetry::GpuSample s,
                                              const std::set<std::string>& sampled) const {
  AttributedSample a;
  if (auto it = placements_.by_device.find(s.uuid); it != placements_.by_device.end())
    a.jobs = it->second;
  for (const auto& [mig, parent] : placements_.parent_of) {
    if (parent != s.uuid || sampled.contains(mig)) continue;
    auto it = placements_.by_device.find(mig);
    if (it == placements_.by_device.end()) continue;
    for (const auto& j : it->second)
      if (std::find(a.jobs.begin(), a.jobs.end(), j) == a.jobs.end()) a.jobs.push_back(j);
  }
  for (const auto& p : s.processes) {
    const auto session = options_.session_of ? options_.session_of(p.pid) : std::nullopt;
    if (!session) continue;
    auto it = placements_.by_session.find(*session);
    if (it == placements_.by_session.end()) continue;
    a.process_job[p.pid] = it->second.id;
    // A process of a job not placed here (it ignored CUDA_VISIBLE_DEVICES) still uses the GPU.
    if (std::find(a.jobs.begin(), a.jobs.end(), it->second) == a.jobs.end())
      a.jobs.push_back(it->second);
  }
  a.sample = std::move(s);
  return a;
}

util::Status TelemetryRecorder::record_once(util::Time now) {
  auto samples = sampler_.sample(now);
  if (!samples.is_ok()) return samples.status();
  std::vector<store::TelemetryMinute> closed;
  std::vector<AttributedSample> round;
  bool refresh = false;
  {
    util::MutexLock lock(mu_);
    const util::Time minute = util::minute_of(now);
    if (open_minute_ && minute != *open_minute_) closed = close_minute();
    open_minute_ = minute;
    order_.clear();
    std::set<std::string> sampled;
    for (const auto& s : *samples) sampled.insert(s.uuid);
    for (auto& s : *samples) {
      AttributedSample a = attribute(std::move(s), sampled);
      const std::string uuid = a.sample.uuid;
      order_.push_back(uuid);
      if (a.jobs.empty()) open_[{uuid, 0}].add(a.sample);
      for (const auto& j : a.jobs) open_[{uuid, j.id}].add(a.sample);
      if (options_.on_round) round.push_back(a);
      auto& ring = ring_[uuid];
      ring.push_back(std::move(a));
      while (static_cast<int>(ring.size()) > options_.ring_samples) ring.pop_front();
    }
    if (now >= next_data_wait_) {
      next_data_wait_ = now + kDataWaitRefresh;
      refresh = !placements_.metrics_files.empty();
    }
  }
  if (refresh) refresh_data_wait();
  if (options_.on_round) options_.on_round(now, round);
  if (closed.empty()) return util::Status::ok();
  return write(std::move(closed), now);
}

std::vector<store::TelemetryMinute> TelemetryRecorder::close_minute() {
  std::vector<store::TelemetryMinute> rows;
  for (const auto& [key, summary] : open_) {
    store::TelemetryMinute m = summary.row(key.first, open_minute_.value_or(util::Time{}));
    if (key.second > 0) m.job = util::JobId(key.second);
    rows.push_back(std::move(m));
  }
  open_.clear();
  return rows;
}

util::Status TelemetryRecorder::write(std::vector<store::TelemetryMinute> rows, util::Time now) {
  if (!options_.sink || rows.empty()) return util::Status::ok();
  const util::Time prune_before = now - std::chrono::hours(24) * options_.retention_days;
  return options_.sink(rows, prune_before);
}

util::Status TelemetryRecorder::flush() {
  std::vector<store::TelemetryMinute> rows;
  {
    util::MutexLock lock(mu_);
    rows = close_minute();
  }
  return write(std::move(rows), clock_.now());
}

void TelemetryRecorder::apply_load(const std::string& uuid,
                                   const std::optional<telemetry::SyntheticLoad>& load) {
  sampler_.set_synthetic_load(uuid, load);
}

void TelemetryRecorder::set_placements(TelemetryPlacements placements) {
  util::MutexLock lock(mu_);
  placements_ = std::move(placements);
  for (auto it = applied_loads_.begin(); it != applied_loads_.end();) {
    auto now = placements_.loads.find(it->first);
    if (now != placements_.loads.end() && now->second.job_id == it->second.job_id) {
      ++it;
      continue;
    }
    data_wait_.erase(it->first);  // the job left the device: its input stalls went with it
    dtype_.erase(it->first);
    if (now != placements_.loads.end()) {
      ++it;  // another job took the device; its load is set below
      continue;
    }
    apply_load(it->first, std::nullopt);
    it = applied_loads_.erase(it);
  }
  for (auto& [uuid, load] : placements_.loads) {
    if (auto dw = data_wait_.find(uuid); dw != data_wait_.end())
      load.data_wait_fraction = dw->second;
    if (auto dt = dtype_.find(uuid); dt != dtype_.end()) load.dtype = dt->second;
    auto applied = applied_loads_.find(uuid);
    if (applied != applied_loads_.end() && same_load(applied->second, load)) continue;
    apply_load(uuid, load);
    applied_loads_[uuid] = load;
  }
}

void TelemetryRecorder::refresh_data_wait() {
  std::map<std::string, std::string> files;
  {
    util::MutexLock lock(mu_);
    files = placements_.metrics_files;
  }
  std::map<std::string, StepFacts> found;
  for (const auto& [uuid, file] : files) {
    StepFacts facts = step_facts(file);
    if (facts.data_wait_fraction || !facts.dtype.empty()) found[uuid] = std::move(facts);
  }
  util::MutexLock lock(mu_);
  for (const auto& [uuid, facts] : found) {
    if (facts.data_wait_fraction) data_wait_[uuid] = *facts.data_wait_fraction;
    if (!facts.dtype.empty()) dtype_[uuid] = facts.dtype;
    auto load = placements_.loads.find(uuid);
    if (load == placements_.loads.end()) continue;
    if (facts.data_wait_fraction) load->second.data_wait_fraction = facts.data_wait_fraction;
    if (!facts.dtype.empty()) load->second.dtype = facts.dtype;
    auto applied = applied_loads_.find(uuid);
    if (applied != applied_loads_.end() && same_load(applied->second, load->second)) continue;
    apply_load(uuid, load->second);
    applied_loads_[uuid] = load->second;
  }
}

std::vector<AttributedSample> TelemetryRecorder::latest() const {
  util::MutexLock lock(mu_);
  std::vector<AttributedSample> out;
  for (const auto& uuid : order_) {
    auto it = ring_.find(uuid);
    if (it != ring_.end() && !it->second.empty()) out.push_back(it->second.back());
  }
  return out;
}

std::vector<telemetry::GpuSample> TelemetryRecorder::recent_for_job(int64_t job,
                                                                    util::Time since) const {
  std::vector<telemetry::GpuSample> out;
  {
    util::MutexLock lock(mu_);
    for (const auto& [uuid, ring] : ring_) {
      for (const auto& a : ring) {
        if (a.sample.time < since) continue;
        const bool mine =
            std::any_of(a.jobs.begin(), a.jobs.end(), [&](const JobRef& j) { return j.id == job; });
        if (mine) out.push_back(a.sample);
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
  return out;
}

}  // namespace trainyard::server
