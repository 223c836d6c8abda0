// Reading a job's metrics file (docs/job-contract.md, "Metrics") into StepMetrics. Lenient where
// the contract says so (unknown fields, null loss, a torn last line), precise everywhere else.
#include <cmath>

#include <fmt/format.h>

#include "telemetry/doctor.h"
#include "util/read_file.h"

namespace trainyard::telemetry {
namespace {

using nlohmann::json;

std::string type_of(const json& v) {
  return v.type_name();
}

util::Status field_error(std::string_view field, std::string_view must, const json& got) {
  return util::invalid_argument(fmt::format("`{}` must be {} (got {} {})", field, must,
                                            type_of(got), got.dump().substr(0, 40)));
}

// A finite non-negative number (`what` says which kind), or an error naming the field.
util::Status read_non_negative(const json& obj, const char* field, std::string_view what,
                               std::optional<double>& out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return util::Status::ok();
  if (!it->is_number()) return field_error(field, what, *it);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return field_error(field, "a finite number >= 0", *it);
  out = v;
  return util::Status::ok();
}

util::Status read_seconds(const json& obj, const char* field, std::optional<double>& out) {
  return read_non_negative(obj, field, "a number of seconds", out);
}

util::Status read_count(const json& obj, const char* field, std::optional<int64_t>& out) {
  auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) return util::Status::ok();
  if (it->is_number_integer()) {
    const int64_t v = it->get<int64_t>();
    if (v < 0) return field_error(field, "an integer >= 0", *it);
    out = v;
    return util::Status::ok();
  }
  // Python writers can emit 12.0 for a step count; accept whole numbers in range.
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && v >= 0 && v < 9.0e15 && std::floor(v) == v) {
      out = static_cast<int64_t>(v);
      return util::Status::ok();
    }
  }
  return field_error(field, "an integer >= 0", *it);
}

bool read_flag(const json& obj, const char* field) {
  auto it = obj.find(field);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

// trainyard.tune's line (tune_micro_batch present): its choice and measured speed-up.
util::Status read_tune(const json& obj, StepMetrics& m) {
  std::optional<int64_t> micro;
  TY_RETURN_IF_ERROR(read_count(obj, "tune_micro_batch", micro));
  if (!micro) return util::Status::ok();
  StepMetrics::Tune t{.micro_batch = *micro};
  TY_RETURN_IF_ERROR(read_count(obj, "tune_accum_steps", t.accum_steps));
  TY_RETURN_IF_ERROR(read_count(obj, "tune_world_size", t.world_size));
  TY_RETURN_IF_ERROR(read_count(obj, "tune_global_batch", t.global_batch));
  TY_RETURN_IF_ERROR(read_count(obj, "tune_target_global_batch", t.target_global_batch));
  TY_RETURN_IF_ERROR(read_count(obj, "tune_largest_micro_batch", t.largest_micro_batch));
  TY_RETURN_IF_ERROR(read_non_negative(obj, "tune_speedup", "a number", t.speedup));
  TY_RETURN_IF_ERROR(read_seconds(obj, "tune_step_time_s", t.step_time_s));
  TY_RETURN_IF_ERROR(read_seconds(obj, "tune_naive_step_time_s", t.naive_step_time_s));
  t.channels_last = read_flag(obj, "tune_channels_last");
  t.tf32 = read_flag(obj, "tune_tf32");
  m.tune = t;
  return util::Status::ok();
}

}  // namespace

util::Result<StepMetrics> parse_step_metrics_line(std::string_view line) {
  const json obj = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded())
    return util::invalid_argument("not a JSON object (cannot parse the line)");
  if (!obj.is_object()) {
    return util::invalid_argument(fmt::format("must be a JSON object, got {}", type_of(obj)));
  }
  StepMetrics m;
  auto time = obj.find("time");
  if (time == obj.end()) {
    return util::invalid_argument("missing `time` (seconds since the Unix epoch, a number)");
  }
  if (!time->is_number()) return field_error("time", "seconds since the Unix epoch", *time);
  const double t = time->get<double>();
  // Refuse values that would overflow milliseconds in int64 (year ~292 million).
  if (!std::isfinite(t) || std::fabs(t) > 9.0e12) {
    return field_error("time", "seconds since the Unix epoch", *time);
  }
  m.time = util::from_millis(std::llround(t * 1000));
  TY_RETURN_IF_ERROR(read_count(obj, "step", m.step));
  TY_RETURN_IF_ERROR(read_count(obj, "samples", m.samples));
  TY_RETURN_IF_ERROR(read_count(obj, "total_steps", m.total_steps));
  if (auto it = obj.find("loss"); it != obj.end() && !it->is_null()) {
    if (!it->is_number()) return field_error("loss", "a number or null", *it);
    m.loss = it->get<double>();
  }
  TY_RETURN_IF_ERROR(read_seconds(obj, "data_wait_s", m.data_wait_s));
  TY_RETURN_IF_ERROR(read_seconds(obj, "step_time_s", m.step_time_s));
  if (auto it = obj.find("dtype"); it != obj.end() && !it->is_null()) {
    if (!it->is_string()) return field_error("dtype", "a string such as \"bf16\"", *it);
    m.dtype = it->get<std::string>();
  }
  TY_RETURN_IF_ERROR(read_seconds(obj, "comm_wait_s", m.comm_wait_s));
  TY_RETURN_IF_ERROR(read_count(obj, "comm_bytes", m.comm_bytes));
  TY_RETURN_IF_ERROR(read_tune(obj, m));
  return m;
}

util::Result<std::vector<StepMetrics>> parse_step_metrics_text(std::string_view text,
                                                               std::string_view source) {
  std::vector<StepMetrics> out;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const bool complete = nl != std::string_view::npos;
    std::string_view line = text.substr(pos, complete ? nl - pos : std::string_view::npos);
    pos = complete ? nl + 1 : text.size();
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto m = parse_step_metrics_line(line);
    if (!m.is_ok()) {
      // A writer appends whole lines, so a bad line without its newline is one caught mid-write.
      if (!complete) break;
      return util::invalid_argument(
          fmt::format("{}:{}: {}", source, line_no, m.status().message()));
    }
    out.push_back(std::move(*m));
  }
  return out;
}

util::Result<std::vector<StepMetrics>> read_step_metrics_file(const std::string& path) {
  TY_ASSIGN_OR_RETURN(const std::string text, util::read_file(path, {.what = "the metrics file"}));
  return parse_step_metrics_text(text, path);
}

}  // namespace trainyard::telemetry
