#include "server/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace trainyard::server {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MetricsExposition, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(escape_label_value(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(escape_label_value("two\nlines"), R"(two\nlines)");
  ExpositionWriter w;
  w.family("x_total", "counter", "Counts \\ things\nof two lines.");
  w.sample("x_total", {{"team", "r\"&d"}, {"empty", ""}}, 3);
  EXPECT_EQ(w.text(),
            "# HELP x_total Counts \\\\ things\\nof two lines.\n# TYPE x_total counter\n"
            "x_total{team=\"r\\\"&d\"} 3\n");
}

TEST(MetricsExposition, FormatsValuesAsPrometheusParsesThem) {
  EXPECT_EQ(format_metric_value(42), "42");
  EXPECT_EQ(format_metric_value(0.25), "0.25");
  EXPECT_EQ(format_metric_value(-3), "-3");
  EXPECT_EQ(format_metric_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_metric_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_metric_value(std::nan("")), "NaN");
}

TEST(MetricsExposition, HistogramBucketsAreCumulativeAndEndWithInf) {
  Histogram h({1, 0.1, 10});  // unsorted on purpose
  for (double v : {0.05, 0.1, 0.5, 2.0, 50.0, 60.0}) h.observe(v);
  ExpositionWriter w;
  w.family("d_seconds", "histogram", "Durations.");
  w.histogram("d_seconds", {{"route", "/x"}}, h.snapshot());
  const auto lines = lines_of(w.text());
  ASSERT_EQ(lines.size(), 2u + 4u + 2u);
  EXPECT_EQ(lines[2], "d_seconds_bucket{route=\"/x\",le=\"0.1\"} 2");  // le is inclusive
  EXPECT_EQ(lines[3], "d_seconds_bucket{route=\"/x\",le=\"1\"} 3");
  EXPECT_EQ(lines[4], "d_seconds_bucket{route=\"/x\",le=\"10\"} 4");
  EXPECT_EQ(lines[5], "d_seconds_bucket{route=\"/x\",le=\"+Inf\"} 6");
  EXPECT_EQ(lines[6], "d_seconds_sum{route=\"/x\"} 112.65");
  EXPECT_EQ(lines[7], "d_seconds_count{route=\"/x\"} 6");
}

TEST(MetricsExposition, HistogramWithoutLabelsHasOnlyLe) {
  Histogram h({1});
  ExpositionWriter w;
  w.histogram("q", {}, h.snapshot());
  EXPECT_EQ(w.text(), "q_bucket{le=\"1\"} 0\nq_bucket{le=\"+Inf\"} 0\nq_sum 0\nq_count 0\n");
}

TEST(MetricsRoutes, PathsBecomeTheirPatternSoLabelsStayFew) {
  EXPECT_EQ(route_of("/api/v1/jobs"), "/api/v1/jobs");
  EXPECT_EQ(route_of("/api/v1/jobs/17"), "/api/v1/jobs/{id}");
  EXPECT_EQ(route_of("/api/v1/jobs/17/logs"), "/api/v1/jobs/{id}/logs");
  EXPECT_EQ(route_of("/api/v1/jobs/abc/telemetry"), "/api/v1/jobs/{id}/telemetry");
  EXPECT_EQ(route_of("/api/v1/gpus"), "/api/v1/gpus");
  EXPECT_EQ(route_of("/metrics"), "/metrics");
  EXPECT_EQ(route_of("/api/v1/jobs/17/nope"), "other");
  EXPECT_EQ(route_of("/random/path/12345"), "other");
  EXPECT_EQ(route_of("/api/v1/jobs//logs"), "other");
}

AttributedSample gpu_sample(int index, std::string uuid) {
  AttributedSample a;
  a.sample.index = index;
  a.sample.uuid = std::move(uuid);
  a.sample.name = "NVIDIA H100 80GB HBM3";
  a.sample.pci_bus_id = "00000000:1B:00.0";
  return a;
}

TEST(GpuMetrics, DcgmNamesLabelsAndJobsWithoutNulls) {
  AttributedSample busy = gpu_sample(0, "GPU-a");
  busy.sample.gpu_util_percent = 97;
  busy.sample.memory_used_bytes = uint64_t{1} << 30;
  busy.sample.memory_total_bytes = uint64_t{80} << 30;
  busy.jobs = {{.id = 7, .name = "train", .team = "vision"}};
  AttributedSample idle = gpu_sample(1, "GPU-b");
  idle.sample.gpu_util_percent = 0;  // a real zero is written
  ExpositionWriter w;
  write_gpu_metrics(w, {busy, idle}, "host1");
  const std::string text = w.text();
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"00000000:1B:00."
                      "0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname="
                      "\"host1\",hostname=\"host1\",hpc_job=\"7\",team=\"vision\"} 97\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\","), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{gpu=\"0\""), std::string::npos);
  EXPECT_NE(text.find("} 1024\n"), std::string::npos);   // MiB
  EXPECT_NE(text.find("} 80896\n"), std::string::npos);  // FB_FREE = 79 GiB in MiB
  // GPU 1 reported no memory: no FB line for it, and no family without samples at all.
  EXPECT_EQ(text.find("DCGM_FI_DEV_FB_USED{gpu=\"1\""), std::string::npos);
  EXPECT_EQ(text.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos);
  // The line of the idle GPU has no job labels.
  const size_t idle_line = text.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"1\"");
  EXPECT_EQ(text.substr(idle_line, text.find('\n', idle_line) - idle_line).find("hpc_job"),
            std::string::npos);
}

// The value of the one line of `family` in `text` (-1 when there is none).
double line_value(const std::string& text, const std::string& family) {
  const size_t at = text.find("\n" + family + "{");
  if (at == std::string::npos) return -1;
  const size_t end = text.find('\n', at + 1);
  const size_t space = text.rfind(' ', end);
  return std::stod(text.substr(space + 1, end - space - 1));
}

TEST(GpuMetrics, XidErrorsIsZeroOnAWatchedGpuWithoutErrorsAndAbsentWhenUnwatched) {
  AttributedSample healthy = gpu_sample(0, "GPU-a");
  healthy.sample.xid_count = 0;
  ExpositionWriter w;
  write_gpu_metrics(w, {healthy}, "h");
  EXPECT_EQ(line_value(w.text(), "DCGM_FI_DEV_XID_ERRORS"), 0);
  AttributedSample failed = healthy;
  failed.sample.xid_count = 2;
  failed.sample.last_xid = 79;
  ExpositionWriter w2;
  write_gpu_metrics(w2, {failed}, "h");
  EXPECT_EQ(line_value(w2.text(), "DCGM_FI_DEV_XID_ERRORS"), 79);
  ExpositionWriter w3;
  write_gpu_metrics(w3, {gpu_sample(0, "GPU-a")}, "h");  // events not watched: unknown
  EXPECT_EQ(w3.text().find("DCGM_FI_DEV_XID_ERRORS"), std::string::npos);
}

TEST(GpuMetrics, DcgmDefaultFieldsHaveTheirTypesAndUnits) {
  AttributedSample a = gpu_sample(0, "GPU-a");
  telemetry::GpuSample& s = a.sample;
  s.tensor_active_percent = 42;
  s.dram_active_percent = 30;
  s.gr_engine_active_percent = 95;
  s.sm_active_percent = 80;
  s.memory_temperature_c = 71;
  s.slowdown_temperature_c = 87;
  s.energy_mj = 123456789;
  s.pcie_replay_count = 3;
  s.violation_power_us = 1;
  s.violation_thermal_us = 2;
  s.violation_sync_boost_us = 3;
  s.violation_board_limit_us = 4;
  s.violation_low_util_us = 5;
  s.violation_reliability_us = 6;
  s.remapped_rows_correctable = 7;
  s.remapped_rows_uncorrectable = 8;
  s.row_remap_failed = true;
  s.nvlink_tx_bytes_per_s = 1024.0 * 1000 * 3;  // 3000 KiB/s
  s.nvlink_rx_bytes_per_s = 1024.0 * 1000 * 1;
  ExpositionWriter w;
  write_gpu_metrics(w, {a}, "h");
  const std::string text = w.text();
  // Profiling fields are DCGM's 0..1 ratios.
  EXPECT_DOUBLE_EQ(line_value(text, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"), 0.42);
  EXPECT_DOUBLE_EQ(line_value(text, "DCGM_FI_PROF_DRAM_ACTIVE"), 0.30);
  EXPECT_DOUBLE_EQ(line_value(text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), 0.95);
  EXPECT_DOUBLE_EQ(line_value(text, "DCGM_FI_PROF_SM_ACTIVE"), 0.80);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_MEMORY_TEMP"), 71);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_SLOWDOWN_TEMP"), 87);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), 123456789);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"), 3);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_POWER_VIOLATION"), 1);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_THERMAL_VIOLATION"), 2);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_SYNC_BOOST_VIOLATION"), 3);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION"), 4);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_LOW_UTIL_VIOLATION"), 5);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_RELIABILITY_VIOLATION"), 6);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"), 7);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"), 8);
  EXPECT_EQ(line_value(text, "DCGM_FI_DEV_ROW_REMAP_FAILURE"), 1);
  EXPECT_DOUBLE_EQ(line_value(text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"), 4);  // KiB/s / 1000
  // dcgm-exporter's types and help texts.
  for (
      const char* line :
      {"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n",
       "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n",
       "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n",
       "# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n",
       "# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in us).\n",
       "# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge\n",
       "# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter\n",
       "# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter\n",
       "# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge\n",
       "# HELP DCGM_FI_PROF_PIPE_TENSOR_ACTIVE Ratio of cycles the tensor (HMMA) pipe is active "
       "(in "
       "%).\n",
       "# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

TEST(GpuMetrics, MigDevicesUseTheirParentUuidAndInstanceLabels) {
  AttributedSample parent = gpu_sample(0, "GPU-p");
  parent.sample.memory_total_bytes = uint64_t{40} << 30;
  AttributedSample mig = gpu_sample(0, "MIG-x");
  mig.sample.is_mig = true;
  mig.sample.mig_profile = "1g.5gb";
  mig.sample.gpu_instance_id = 9;
  mig.sample.memory_total_bytes = uint64_t{5} << 30;
  mig.jobs = {{.id = 3, .name = "m", .team = "t"}, {.id = 4, .name = "n", .team = "u"}};
  ExpositionWriter w;
  write_gpu_metrics(w, {parent, mig}, "h");
  const std::string text = w.text();
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_TOTAL{gpu=\"0\",UUID=\"GPU-p\",pci_bus_id=\"00000000:1B:00."
                      "0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",GPU_I_PROFILE="
                      "\"1g.5gb\",GPU_I_ID=\"9\",Hostname=\"h\",hostname=\"h\",hpc_job=\"3\",team="
                      "\"t\"} 5120\n"),
            std::string::npos)
      << text;
  // A device shared by two jobs: one series per job, as dcgm-exporter's job mapping does.
  EXPECT_NE(text.find("hpc_job=\"4\",team=\"u\"} 5120\n"), std::string::npos);
}

TEST(ServerMetricsText, EveryFamilyHasHelpAndType) {
  ServerMetrics m;
  m.queue_wait.observe(12);
  m.schedule_cycle.observe(0.003);
  m.observe_request("GET", "/api/v1/jobs/{id}", 200, 0.002);
  ClusterCounts c;
  c.jobs_by_state = {{"pending", 2}, {"running", 1}};
  c.gpus = {{.node = "n", .model = "H100-80GB", .total = 4, .allocated = 1.5}};
  ExpositionWriter w;
  write_server_metrics(w, c, m);
  const std::string text = w.text();
  for (const char* family :
       {"trainyard_jobs", "trainyard_queue_wait_seconds", "trainyard_gpu_allocated",
        "trainyard_gpu_capacity", "trainyard_schedule_cycle_seconds",
        "trainyard_api_request_duration_seconds"}) {
    EXPECT_NE(text.find(std::string("# HELP ") + family + " "), std::string::npos) << family;
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " "), std::string::npos) << family;
  }
  EXPECT_NE(text.find("trainyard_jobs{state=\"pending\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("trainyard_gpu_allocated{node=\"n\",model=\"H100-80GB\"} 1.5\n"),
            std::string::npos);
  EXPECT_NE(text.find("trainyard_api_request_duration_seconds_count{method=\"GET\",route=\"/api/"
                      "v1/jobs/{id}\",code=\"200\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("trainyard_queue_wait_seconds_bucket{le=\"15\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace trainyard::server
