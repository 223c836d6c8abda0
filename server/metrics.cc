// The exposition writer, the server's histograms and trainyard's own metric families. The GPU
// families are in metrics_gpu.cc; docs/metrics.md lists both.
#include "server/metrics.h"
#include "util/thread_annotations.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

namespace trainyard::server {
namespace {

// trainyard's own families: name, type, help. Units are in the names, as Prometheus asks.
constexpr const char* kJobs = "trainyard_jobs";
constexpr const char* kQueueWait = "trainyard_queue_wait_seconds";
constexpr const char* kGpuAllocated = "trainyard_gpu_allocated";
constexpr const char* kGpuCapacity = "trainyard_gpu_capacity";
constexpr const char* kScheduleCycle = "trainyard_schedule_cycle_seconds";
constexpr const char* kApiDuration = "trainyard_api_request_duration_seconds";
constexpr const char* kAlertsFiring = "trainyard_alerts_firing";

// Queue waits run from a second to days; cycles and requests from a millisecond up.
const std::vector<double> kQueueWaitBuckets = {1,   5,    15,   30,   60,    120,   300,
                                               600, 1800, 3600, 7200, 14400, 43200, 86400};
const std::vector<double> kFastBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                          0.1,    0.25,  0.5,    1,     2.5,  5,     10};

// The routes the API serves, as patterns (see http_routes.cc).
constexpr std::array<std::string_view, 7> kPlainRoutes = {
    "/healthz",       "/metrics",       "/api/v1/jobs",  "/api/v1/nodes",
    "/api/v1/queues", "/api/v1/tokens", "/api/v1/alerts"};
constexpr std::array<std::string_view, 6> kJobSubroutes = {
    "", "/cancel", "/events", "/checkpoints", "/logs", "/telemetry"};

void append_labels(std::string& out, const MetricLabels& labels, std::string_view extra_key = {},
                   std::string_view extra_value = {}) {
  if (labels.empty() && extra_key.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (v.empty()) continue;  // an empty label value is the same as no label
    out += fmt::format("{}{}=\"{}\"", first ? "" : ",", k, escape_label_value(v));
    first = false;
  }
  if (!extra_key.empty())
    out += fmt::format("{}{}=\"{}\"", first ? "" : ",", extra_key, escape_label_value(extra_value));
  out += '}';
  if (out.ends_with("{}")) out.resize(out.size() - 2);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds) {
  std::sort(bounds.begin(), bounds.end());
  data_.counts.assign(bounds.size() + 1, 0);
  data_.bounds = std::move(bounds);
}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  util::MutexLock lock(mu_);
  const auto it = std::lower_bound(data_.bounds.begin(), data_.bounds.end(), value);
  data_.counts[static_cast<size_t>(it - data_.bounds.begin())] += 1;
  data_.sum += value;
  data_.count += 1;
}

Histogram::Snapshot Histogram::snapshot() const {
  util::MutexLock lock(mu_);
  return data_;
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{}", value);
}

void ExpositionWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  std::string escaped;
  for (char c : help) escaped += c == '\\' ? "\\\\" : c == '\n' ? "\\n" : std::string(1, c);
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escaped, name, type);
}

void ExpositionWriter::sample(std::string_view name, const MetricLabels& labels, double value) {
  out_ += name;
  append_labels(out_, labels);
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void ExpositionWriter::histogram(std::string_view name, const MetricLabels& labels,
                                 const Histogram::Snapshot& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    out_ += fmt::format("{}_bucket", name);
    append_labels(out_, labels, "le",
                  i < h.bounds.size() ? format_metric_value(h.bounds[i]) : "+Inf");
    out_ += fmt::format(" {}\n", cumulative);
  }
  sample(fmt::format("{}_sum", name), labels, h.sum);
  sample(fmt::format("{}_count", name), labels, static_cast<double>(h.count));
}

ServerMetrics::ServerMetrics() : queue_wait(kQueueWaitBuckets), schedule_cycle(kFastBuckets) {}

void ServerMetrics::observe_request(const std::string& method, const std::string& route, int code,
                                    double seconds) {
  util::MutexLock lock(mu_);
  auto key = std::make_tuple(method, route, code);
  auto it = requests_.find(key);
  if (it == requests_.end())
    it = requests_
             .emplace(std::piecewise_construct, std::forward_as_tuple(key),
                      std::forward_as_tuple(kFastBuckets))
             .first;
  it->second.observe(seconds);
}

std::vector<std::pair<MetricLabels, Histogram::Snapshot>> ServerMetrics::requests() const {
  util::MutexLock lock(mu_);
  std::vector<std::pair<MetricLabels, Histogram::Snapshot>> out;
  for (const auto& [key, h] : requests_) {
    const auto& [method, route, code] = key;
    out.emplace_back(
        MetricLabels{{"method", method}, {"route", route}, {"code", std::to_string(code)}},
        h.snapshot());
  }
  return out;
}

std::string route_of(std::string_view path) {
  for (auto r : kPlainRoutes)
    if (path == r) return std::string(r);
  if (path == "/api/v1/gpus") return "/api/v1/gpus";
  constexpr std::string_view kJobsPrefix = "/api/v1/jobs/";
  if (!path.starts_with(kJobsPrefix)) return "other";
  const std::string_view rest = path.substr(kJobsPrefix.size());
  const size_t slash = rest.find('/');
  if (slash == 0 || rest.empty()) return "other";
  const std::string_view sub = slash == std::string_view::npos ? "" : rest.substr(slash);
  for (auto s : kJobSubroutes)
    if (sub == s) return fmt::format("/api/v1/jobs/{{id}}{}", s);
  return "other";
}

void write_server_metrics(ExpositionWriter& w, const ClusterCounts& counts,
                          const ServerMetrics& metrics) {
  w.family(kJobs, "gauge", "Jobs by state (ended jobs included, since the state database began).");
  for (const auto& [state, n] : counts.jobs_by_state)
    w.sample(kJobs, {{"state", state}}, static_cast<double>(n));
  w.family(
      kQueueWait, "histogram",
      "Seconds a job waited in pending before its workers started (each start of an attempt).");
  w.histogram(kQueueWait, {}, metrics.queue_wait.snapshot());
  w.family(kGpuAllocated, "gauge",
           "GPUs held by jobs, per node and model; a fraction or MIG slice counts its share.");
  for (const auto& p : counts.gpus)
    w.sample(kGpuAllocated, {{"node", p.node}, {"model", p.model}}, p.allocated);
  w.family(kGpuCapacity, "gauge", "GPUs the scheduler may use, per node and model.");
  for (const auto& p : counts.gpus)
    w.sample(kGpuCapacity, {{"node", p.node}, {"model", p.model}}, p.total);
  w.family(kScheduleCycle, "histogram",
           "Seconds one reconcile cycle took (observe workers, plan, preempt, start).");
  w.histogram(kScheduleCycle, {}, metrics.schedule_cycle.snapshot());
  w.family(kApiDuration, "histogram",
           "Seconds the API took to answer, by method, route pattern and HTTP status code.");
  for (const auto& [labels, h] : metrics.requests()) w.histogram(kApiDuration, labels, h);
  if (!counts.alerts_firing.empty()) {
    w.family(kAlertsFiring, "gauge", "Alerts firing now, by rule and severity (docs/alerts.md).");
    for (const auto& [key, n] : counts.alerts_firing)
      w.sample(kAlertsFiring, {{"rule", key.first}, {"severity", key.second}},
               static_cast<double>(n));
  }
}

}  // namespace trainyard::server
