// GET /api/v1/jobs/{id}/metrics: the step metrics a job's rank 0 wrote to its metrics file
// (docs/job-contract.md, "Metrics") over every attempt, as time series for charts (the web UI's
// job page): loss, step time, data wait and throughput, averaged down to at most `max_points`.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "exec/executor.h"
#include "server/control_plane.h"
#include "server/job_metrics.h"
#include "telemetry/doctor.h"
#include "telemetry/step_progress.h"

namespace trainyard::server {
namespace {

// A metrics file larger than this is read from its last this-many bytes only.
constexpr int64_t kMaxMetricsBytes = 64ll << 20;

struct Bucket {
  double time_s = 0;
  int attempt = 0;
  std::optional<int64_t> step;
  double loss_sum = 0, step_time_sum = 0, wait_sum = 0, samples_sum = 0, samples_time = 0;
  int loss_n = 0, step_time_n = 0, wait_n = 0;
};

nlohmann::json mean_or_null(double sum, int n) {
  return n > 0 && std::isfinite(sum / n) ? nlohmann::json(sum / n) : nlohmann::json(nullptr);
}

// Buckets of `per` consecutive lines of one attempt each.
std::vector<Bucket> bucket_lines(const std::vector<std::pair<int, telemetry::StepMetrics>>& lines,
                                 size_t per) {
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& [attempt, m] = lines[i];
    if (i % per == 0 || buckets.empty() || buckets.back().attempt != attempt)
      buckets.emplace_back();
    Bucket& b = buckets.back();
    b.time_s = static_cast<double>(util::to_millis(m.time)) / 1000.0;
    b.attempt = attempt;
    if (m.step) b.step = m.step;
    if (m.loss && std::isfinite(*m.loss)) b.loss_sum += *m.loss, ++b.loss_n;
    if (m.step_time_s) {
      b.step_time_sum += *m.step_time_s, ++b.step_time_n;
      if (m.samples)
        b.samples_sum += static_cast<double>(*m.samples), b.samples_time += *m.step_time_s;
    }
    if (m.data_wait_s) b.wait_sum += *m.data_wait_s, ++b.wait_n;
  }
  return buckets;
}

// Attempt boundaries may add buckets: merge neighbours of one attempt until they fit.
void merge_buckets(std::vector<Bucket>& buckets, size_t max_points) {
  while (buckets.size() > max_points) {
    std::vector<Bucket> merged;
    for (auto& b : buckets) {
      if (!merged.empty() && merged.size() % 2 == 1 && merged.back().attempt == b.attempt) {
        Bucket& a = merged.back();
        a.time_s = b.time_s;
        if (b.step) a.step = b.step;
        a.loss_sum += b.loss_sum, a.loss_n += b.loss_n;
        a.step_time_sum += b.step_time_sum, a.step_time_n += b.step_time_n;
        a.wait_sum += b.wait_sum, a.wait_n += b.wait_n;
        a.samples_sum += b.samples_sum, a.samples_time += b.samples_time;
      } else {
        merged.push_back(b);
      }
    }
    if (merged.size() == buckets.size()) break;
    buckets = std::move(merged);
  }
}

// Data wait as a share of the step time, in percent; null without both.
nlohmann::json wait_percent(const Bucket& b) {
  const bool share = b.wait_n > 0 && b.step_time_n > 0 && b.step_time_sum > 0;
  if (!share) return nullptr;
  return std::min(100.0, 100.0 * (b.wait_sum / b.wait_n) / (b.step_time_sum / b.step_time_n));
}

}  // namespace

nlohmann::json metrics_series(const std::vector<std::pair<int, telemetry::StepMetrics>>& lines,
                              int max_points) {
  max_points = std::max(1, max_points);
  const size_t n = lines.size();
  const size_t per = std::max<size_t>(
      1, (n + static_cast<size_t>(max_points) - 1) / static_cast<size_t>(max_points));
  std::vector<Bucket> buckets = bucket_lines(lines, per);
  merge_buckets(buckets, static_cast<size_t>(max_points));
  nlohmann::json time = nlohmann::json::array(), attempt = nlohmann::json::array(),
                 step = nlohmann::json::array(), loss = nlohmann::json::array(),
                 step_time = nlohmann::json::array(), wait = nlohmann::json::array(),
                 wait_share = nlohmann::json::array(), samples = nlohmann::json::array();
  for (const auto& b : buckets) {
    time.push_back(b.time_s);
    attempt.push_back(b.attempt);
    step.push_back(b.step ? nlohmann::json(*b.step) : nlohmann::json(nullptr));
    loss.push_back(mean_or_null(b.loss_sum, b.loss_n));
    step_time.push_back(mean_or_null(b.step_time_sum, b.step_time_n));
    wait.push_back(mean_or_null(b.wait_sum, b.wait_n));
    wait_share.push_back(wait_percent(b));
    samples.push_back(b.samples_time > 0 ? nlohmann::json(b.samples_sum / b.samples_time)
                                         : nlohmann::json(nullptr));
  }
  return {{"lines", n},
          {"points", buckets.size()},
          {"time", std::move(time)},
          {"attempt", std::move(attempt)},
          {"step", std::move(step)},
          {"loss", std::move(loss)},
          {"stepTimeSeconds", std::move(step_time)},
          {"dataWaitSeconds", std::move(wait)},
          {"dataWaitPercent", std::move(wait_share)},
          {"samplesPerSecond", std::move(samples)}};
}

util::Result<nlohmann::json> ControlPlane::job_metrics(util::JobId id, int max_points,
                                                       const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, id, rec.team));
  std::vector<std::pair<int, telemetry::StepMetrics>> lines;
  std::vector<std::string> notes;
  // The job controls its metrics files: read them with its own permissions, never root's.
  const auto identity = file_identity(rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  for (int attempt = 1; as_job.ok() && attempt <= rec.attempt; ++attempt) {
    const auto file = run_dir(id, attempt, 0) / exec::kMetricsFile;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    std::vector<telemetry::StepMetrics> steps;
    if (st.st_size > kMaxMetricsBytes) {
      // Too long to chart whole: the newest part, the way progress reads its tail.
      std::ifstream in(file, std::ios::binary);
      in.seekg(st.st_size - kMaxMetricsBytes);
      std::string text(static_cast<size_t>(kMaxMetricsBytes), '\0');
      in.read(text.data(), kMaxMetricsBytes);
      text.resize(static_cast<size_t>(in.gcount()));
      steps = telemetry::parse_metrics_tail(text, false);
      notes.push_back(fmt::format("attempt {}: only the last {} MiB of the metrics file are read",
                                  attempt, kMaxMetricsBytes >> 20));
    } else {
      auto read = telemetry::read_step_metrics_file(file.string());
      if (!read.is_ok()) {
        notes.push_back(
            fmt::format("attempt {}: step metrics not read: {}", attempt, read.status().message()));
        continue;
      }
      steps = std::move(*read);
    }
    for (auto& m : steps) lines.emplace_back(attempt, std::move(m));
  }
  nlohmann::json out = metrics_series(lines, max_points);
  out["job"] = id.value();
  out["notes"] = notes;
  return out;
}

}  // namespace trainyard::server
