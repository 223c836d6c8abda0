// `trainyard telemetry JOB`: a job's per-minute GPU telemetry as CSV (one row per GPU and minute,
// for spreadsheets and pandas), JSON or a table; and the per-minute sparklines `show` draws.
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/job_lookup.h"
#include "cli/output.h"
#include "cli/sparkline.h"
#include "cli/telemetry_rows.h"
#include "cli/telemetry_view.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

constexpr size_t kSparkWidth = 60;
constexpr double kGiB = 1024.0;  // rows hold MiB

util::Result<std::vector<TelemetryRow>> fetch_rows(ApiClient& api, int64_t id) {
  TY_ASSIGN_OR_RETURN(auto job,
                      get_view<model::JobDetailView>(api, fmt::format("/api/v1/jobs/{}", id)));
  // Raw samples are not needed: the minutes include the one in progress.
  TY_ASSIGN_OR_RETURN(auto t, get_view<model::JobTelemetryView>(
                                  api, fmt::format("/api/v1/jobs/{}/telemetry?samples=0", id)));
  return telemetry_rows(t, job);
}

std::string stat_label(const Series& s, const char* unit, int digits) {
  const SeriesStats st = series_stats(s);
  auto f = [&](const std::optional<double>& v) {
    return v ? fmt::format("{:.{}f}", *v, digits) : std::string("-");
  };
  return fmt::format("min {}{} max {}{} mean {}{}", f(st.min), unit, f(st.max), unit, f(st.mean),
                     unit);
}

}  // namespace

void print_gpu_history(const std::vector<TelemetryRow>& rows, bool ascii, std::ostream& out) {
  struct Device {
    std::string label;
    Series util, memory;
    std::optional<double> total;
  };
  std::map<std::string, Device> devices;  // keyed by node, GPU, uuid: stable order
  size_t minutes = 0;
  for (const auto& r : rows) {
    const std::string key = fmt::format("{}/{:04d}/{}", r.node, r.gpu.value_or(9999), r.device);
    Device& d = devices[key];
    d.label = r.gpu ? fmt::format("{} GPU {}", r.node.empty() ? "?" : r.node, *r.gpu) : r.device;
    d.util.push_back(r.util_percent);
    d.memory.push_back(r.memory_used_mib ? std::optional<double>(*r.memory_used_mib / kGiB)
                                         : std::nullopt);
    if (r.memory_total_mib) d.total = *r.memory_total_mib / kGiB;
    minutes = std::max(minutes, d.util.size());
  }
  out << fmt::format(
      "GPU history (per minute, {} minute(s){}):\n", minutes,
      minutes > kSparkWidth ? fmt::format(", averaged to {} marks", kSparkWidth) : "");
  if (devices.empty()) out << "  (no telemetry recorded for this job)\n";
  for (const auto& [key, d] : devices) {
    const SparklineOptions util_opts{.ascii = ascii, .lo = 0.0, .hi = 100.0, .width = kSparkWidth};
    const SparklineOptions mem_opts{.ascii = ascii, .lo = 0.0, .hi = d.total, .width = kSparkWidth};
    out << fmt::format("  {}\n    util {}  {}\n    mem  {}  {}{}\n", d.label,
                       sparkline(d.util, util_opts), stat_label(d.util, "%", 0),
                       sparkline(d.memory, mem_opts), stat_label(d.memory, "", 1),
                       d.total ? fmt::format(" of {:.0f} GiB", *d.total) : " GiB");
  }
}

util::Status print_job_gpu_history(ApiClient& api, int64_t id, bool ascii) {
  TY_ASSIGN_OR_RETURN(auto rows, fetch_rows(api, id));
  print_gpu_history(rows, ascii, std::cout);
  return util::Status::ok();
}

Runner add_telemetry_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string job, output = "table";
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "telemetry",
      "A job's per-minute GPU telemetry: one row per GPU and minute (util, memory, SM active, "
      "power, temperature)");
  cmd->add_option("job", o->job, "Job id or name")->required();
  cmd->add_option("-o,--output", o->output, "csv (RFC 4180, with a header), json or table")
      ->capture_default_str();
  add_client_options(*cmd, o->client);
  return [o] {
    if (o->output != "csv" && o->output != "json" && o->output != "table")
      return report("telemetry", util::invalid_argument("-o must be csv, json or table"));
    ApiClient api(o->client);
    auto id = resolve_job(api, o->job);
    if (!id.is_ok()) return report("telemetry", id.status());
    auto rows = fetch_rows(api, *id);
    if (!rows.is_ok()) return report("telemetry", rows.status());
    if (o->output == "csv") {
      std::cout << rows_csv(*rows);
    } else if (o->output == "json") {
      std::cout << json{{"job", *id}, {"items", rows_json(*rows)}}.dump(2) << "\n";
    } else if (rows->empty()) {
      std::cout << "no telemetry recorded for job " << *id << "\n";
    } else {
      std::cout << render_table(rows_table_header(), rows_table(*rows));
      std::cout << "(* the minute in progress)\n";
    }
    return kExitOk;
  };
}

}  // namespace trainyard::cli
