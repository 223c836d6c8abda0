// Prometheus text exposition (format 0.0.4) for GET /metrics: a small writer that escapes label
// values and renders histograms cumulatively with +Inf, _sum and _count; the server's own
// histograms; and the metric families (GPU metrics named like NVIDIA's dcgm-exporter, trainyard's
// own), all listed in metrics.cc so that docs/metrics.md has one place to match.
// Histogram and ServerMetrics are thread-safe; ExpositionWriter is thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "server/telemetry_recorder.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Counts observations into fixed buckets (upper bounds, ascending).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bucket, not cumulative; one more for above the last
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable util::Mutex mu_;
  Snapshot data_ TY_GUARDED_BY(mu_);
};

// "a\"b" -> a\"b quoted content: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);
// Go-parsable float: integers without exponent or ".0", NaN, +Inf, -Inf.
std::string format_metric_value(double value);

// Builds the exposition text. Every family is introduced once with its HELP and TYPE lines, and
// its samples follow it without another family in between (what the format requires).
class ExpositionWriter {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const MetricLabels& labels, double value);
  // name_bucket{...,le="b"} (cumulative, +Inf last), name_sum, name_count.
  void histogram(std::string_view name, const MetricLabels& labels,
                 const Histogram::Snapshot& snapshot);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// The server's own measurements, observed by the reconcile loop and the HTTP layer.
class ServerMetrics {
 public:
  ServerMetrics();
  Histogram queue_wait;      // seconds from pending to running
  Histogram schedule_cycle;  // seconds of one reconcile cycle
  void observe_request(const std::string& method, const std::string& route, int code,
                       double seconds);
  // One histogram per (method, route, code), sorted.
  std::vector<std::pair<MetricLabels, Histogram::Snapshot>> requests() const;

 private:
  mutable util::Mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, Histogram> requests_ TY_GUARDED_BY(mu_);
};

// The route pattern of a request path ("/api/v1/jobs/12/logs" -> "/api/v1/jobs/{id}/logs"), or
// "other" for paths the API does not serve, so that labels stay few whatever clients send.
std::string route_of(std::string_view path);

// Everything /metrics shows besides the GPUs: counts the control plane takes under its lock.
struct ClusterCounts {
  std::map<std::string, int64_t> jobs_by_state;  // every state, zeros included
  struct Pool {
    std::string node, model;
    double total = 0, allocated = 0;  // GPUs; a fraction or MIG slice counts its share
  };
  std::vector<Pool> gpus;
  std::map<std::pair<std::string, std::string>, int64_t> alerts_firing;  // (rule, severity) -> n
};

// GPU families from the latest samples (each labelled with its jobs as hpc_job and team; a
// device shared by two jobs gets one series per job, as dcgm-exporter's HPC job mapping does).
void write_gpu_metrics(ExpositionWriter& w, const std::vector<AttributedSample>& samples,
                       const std::string& hostname);
void write_server_metrics(ExpositionWriter& w, const ClusterCounts& counts,
                          const ServerMetrics& metrics);

}  // namespace trainyard::server
