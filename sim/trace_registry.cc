// Dispatches a trace file to its adapter by format name, or guesses the format from the
// header row ("auto").
#include <fmt/format.h>

#include "sim/csv_reader.h"
#include "sim/workload.h"

namespace trainyard::sim {

std::vector<std::string> trace_formats() {
  return {"philly"};
}

util::Result<Workload> load_trace(const std::string& format, const std::string& path,
                                  const TraceOptions& opts) {
  std::string fmt_name = format;
  if (fmt_name == "auto") {
    TY_ASSIGN_OR_RETURN(CsvReader csv, CsvReader::open(path));
    TY_RETURN_IF_ERROR(csv.read_header());
    if (csv.has_column("num_gpus") && csv.has_column("cluster")) {
      fmt_name = "philly";
    } else {
      return util::invalid_argument(
          fmt::format("{}: cannot tell the trace format from its header; pass --trace-format with "
                      "one of: philly",
                      path));
    }
  }
  util::Result<Workload> w = util::invalid_argument(
      fmt::format("unknown trace format '{}'; use one of: philly, or auto", fmt_name));
  if (fmt_name == "philly") w = load_philly(path, opts);
  if (!w.is_ok()) return w;
  finalize(*w, opts);
  return w;
}

}  // namespace trainyard::sim
