// Philly (Microsoft, ATC'19) as reduced by the Pollux artifact: timestamp, duration, num_gpus,
// gpu_time, cluster. The virtual cluster becomes the team. Jobs of more than 8 GPUs become
// gangs whose workers take the largest count of at most 8 GPUs that divides the request
// (Philly's servers had 8 GPUs at most); smaller jobs are one worker.
#include <ctime>

#include <fmt/format.h>

#include "sim/traces/common.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

// "2017-10-09 07:01:55" (no time zone: read as UTC) -> seconds since the epoch.
util::Result<int64_t> parse_timestamp(std::string_view s) {
  std::tm tm{};
  int year = 0, mon = 0, day = 0, hh = 0, mm = 0, ss = 0;
  char tail = 0;
  const std::string text(s);
  if (s.find('\0') != std::string_view::npos ||
      std::sscanf(text.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &year, &mon, &day, &hh, &mm, &ss,
                  &tail) != 6 ||
      mon < 1 || mon > 12 || day < 1 || day > 31 || hh < 0 || hh > 23 || mm < 0 || mm > 59 ||
      ss < 0 || ss > 60 || year < 1970) {
    return util::invalid_argument(
        fmt::format("expected a time 'YYYY-MM-DD HH:MM:SS', got '{}'", s));
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hh;
  tm.tm_min = mm;
  tm.tm_sec = ss;
  return static_cast<int64_t>(timegm(&tm));
}

constexpr int kPhillyGpusPerServer = 8;

}  // namespace

util::Result<Workload> load_philly(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_philly_from_text(std::move(text), path, opts);
}

util::Result<Workload> load_philly_from_text(std::string text, const std::string& name,
                                             const TraceOptions& opts) {
  util::CsvReader csv = util::CsvReader::from_string(std::move(text), name);
  TY_RETURN_IF_ERROR(csv.read_header());
  TY_ASSIGN_OR_RETURN(const int c_time, csv.column("timestamp"));
  TY_ASSIGN_OR_RETURN(const int c_duration, csv.column("duration"));
  TY_ASSIGN_OR_RETURN(const int c_gpus, csv.column("num_gpus"));
  TY_ASSIGN_OR_RETURN(const int c_vc, csv.column("cluster"));
  Workload w;
  w.source = name;
  TY_RETURN_IF_ERROR(for_each_row(csv, w, opts, [&]() -> util::Status {
    auto ts = parse_timestamp(csv.field(c_time));
    if (!ts.is_ok()) return csv.error_at(c_time, ts.status().message());
    TY_ASSIGN_OR_RETURN(const double duration, get_duration_seconds(csv, c_duration));
    TY_ASSIGN_OR_RETURN(const int64_t gpus, get_int_in(csv, c_gpus, 1, 4096, "GPUs"));
    const std::string_view vc = csv.field(c_vc);
    if (vc.empty()) return csv.error_at(c_vc, "the virtual cluster (team) is empty");
    TraceJob j;
    j.submit = util::from_seconds(static_cast<double>(*ts));
    j.duration = util::seconds_f(duration);
    j.spec.team = std::string(vc);
    split_into_workers(gpus, worker_gpu_limit(kPhillyGpusPerServer, opts), j.spec);  // 12 -> 2 x 6
    w.jobs.push_back(std::move(j));
    return util::Status::ok();
  }));
  return w;
}

}  // namespace trainyard::sim
