// Writes a Workload as trainyard's generic CSV (every column, in kCsvColumns order), so that
// load_csv_trace() reads back the same jobs: times in exact microseconds, priorities, limits and
// checkpoint intervals as given (a finalize()d workload's choices are frozen), dependencies by id.
#include <fmt/format.h>

#include "model/quantity.h"
#include "sim/traces/csv_columns.h"
#include "sim/workload.h"

namespace trainyard::sim {
namespace {

// Seconds with exactly the microseconds held ("1.5", "0.000001", "42").
std::string format_seconds(util::Duration d) {
  const int64_t us = d.count();
  const uint64_t mag = us < 0 ? 0 - static_cast<uint64_t>(us) : static_cast<uint64_t>(us);
  std::string out = fmt::format("{}{}", us < 0 ? "-" : "", mag / 1'000'000);
  if (mag % 1'000'000 != 0) {
    std::string frac = fmt::format("{:06}", mag % 1'000'000);
    while (frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return out;
}

// Quotes a text cell when needed. Line breaks become spaces: the reader is line-based.
std::string cell(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : "|") + i;
  return out;
}

std::string job_row(const TraceJob& j, int64_t id) {
  const model::JobSpec& s = j.spec;
  std::string deps;
  for (util::JobId d : s.depends_on)
    deps += fmt::format("{}{}", deps.empty() ? "" : "|", d.value());
  return fmt::format(
      "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", id, cell(j.name),
      format_seconds(j.submit - util::kEpoch), format_seconds(j.duration), s.workers, s.worker.gpus,
      s.worker.gpu_milli.value() > 0 ? fmt::format("{}", s.worker.gpu_milli.value()) : "",
      cell(s.worker.mig_profile),
      s.worker.cpu.value() > 0 ? fmt::format("{}m", s.worker.cpu.value()) : "",
      s.worker.memory.value() > 0 ? model::format_bytes(s.worker.memory) : "", cell(s.team),
      s.priority, cell(joined(s.allowed_gpu_models)),
      s.runtime_limit.count() > 0 ? format_seconds(s.runtime_limit) : "",
      s.preemptible ? "true" : "false",
      s.checkpoint_interval.count() > 0 ? format_seconds(s.checkpoint_interval) : "", deps);
}

}  // namespace

std::string format_csv_trace(const Workload& w) {
  std::string out;
  for (auto name : kCsvColumns) out += fmt::format("{}{}", out.empty() ? "" : ",", name);
  out += "\n";
  int64_t ordinal = 0;
  for (const TraceJob& j : w.jobs) {
    ++ordinal;
    out += job_row(j, j.id.value() > 0 ? j.id.value() : ordinal);
  }
  return out;
}

}  // namespace trainyard::sim
