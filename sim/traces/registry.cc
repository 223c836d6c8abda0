// Dispatches a trace to its adapter by format name, or guesses the format from the header row
// ("auto"), then finalize()s the workload. docs/trace-formats.md describes every format.
#include <fmt/format.h>

#include "sim/traces/common.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

using TextLoader = util::Result<Workload> (*)(std::string, const std::string&, const TraceOptions&);

struct TraceFormat {
  std::string_view name;
  TextLoader load;
};

constexpr TraceFormat kFormats[] = {
    {"philly", load_philly_from_text},     {"alibaba", load_alibaba_from_text},
    {"tiresias", load_tiresias_from_text}, {"sia", load_sia_from_text},
    {"pollux", load_pollux_from_text},     {"csv", load_csv_trace_from_text},
    {"sacct", load_sacct_from_text},
};

std::string format_list() {
  std::string out;
  for (const auto& f : kFormats) out += fmt::format("{}{}", out.empty() ? "" : ", ", f.name);
  return out;
}

// `sacct --parsable2` output: a '|'-separated header naming JobID, Submit, Start, End and State.
bool is_sacct_header(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  util::CsvReader csv = util::CsvReader::over(line, "", {.separator = '|', .quoting = false});
  if (!csv.read_header().is_ok()) return false;
  for (auto c : {"JobID", "Submit", "Start", "End", "State"}) {
    if (!csv.has_column(c)) return false;
  }
  return true;
}

// Sia and Pollux files have the same header; "pollux" reads both the same way.
util::Result<std::string> guess_format(const std::string& text, const std::string& name) {
  if (is_sacct_header(text)) return std::string("sacct");
  util::CsvReader csv = util::CsvReader::over(text, name);
  TY_RETURN_IF_ERROR(csv.read_header());
  auto has = [&](std::initializer_list<std::string_view> cols) {
    for (auto c : cols) {
      if (!csv.has_column(c)) return false;
    }
    return true;
  };
  if (has({"num_gpus", "cluster"})) return std::string("philly");
  if (has({"num_gpu", "gpu_milli", "qos"})) return std::string("alibaba");
  if (has({"num_gpu", "model_name", "job_id"})) return std::string("tiresias");
  if (has({"application", "num_replicas", "batch_size"})) return std::string("pollux");
  if (has({"submit_time", "duration", "gpus"})) return std::string("csv");
  return util::invalid_argument(
      fmt::format("{}: cannot tell the trace format from its header; pass --trace-format with "
                  "one of: {}",
                  name, format_list()));
}

}  // namespace

std::vector<std::string> trace_formats() {
  std::vector<std::string> out;
  for (const auto& f : kFormats) out.emplace_back(f.name);
  return out;
}

util::Result<Workload> load_trace(const std::string& format, const std::string& path,
                                  const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_trace_from_text(format, std::move(text), path, opts);
}

util::Result<Workload> load_trace_from_text(const std::string& format, std::string text,
                                            const std::string& name, const TraceOptions& opts) {
  std::string fmt_name = format;
  if (fmt_name == "auto") {
    TY_ASSIGN_OR_RETURN(fmt_name, guess_format(text, name));
  }
  for (const auto& f : kFormats) {
    if (f.name != fmt_name) continue;
    TY_ASSIGN_OR_RETURN(Workload w, f.load(std::move(text), name, opts));
    finalize(w, opts);
    return w;
  }
  return util::invalid_argument(
      fmt::format("unknown trace format '{}'; use one of: {}, or auto", fmt_name, format_list()));
}

}  // namespace trainyard::sim
