// Streams a Kineto trace with simdjson On-Demand: one pass over `traceEvents`, keeping only the
// `ph:"X"` events the analyses need (GPU kernels/copies, CUDA launch calls, ProfilerStep and
// DataLoader ranges) as small integer records with interned names. Nothing else is materialised,
// so memory is a fraction of a DOM's and parsing runs at hundreds of MB/s.
#include <cctype>
#include <cmath>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>
#include <simdjson.h>

#include "telemetry/kineto_trace_internal.h"

namespace trainyard::telemetry::kineto_internal {
namespace {

namespace od = simdjson::ondemand;
static_assert(kJsonPadding >= simdjson::SIMDJSON_PADDING);

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// The fields of one event that matter here. Views point into simdjson's string buffer, which
// lives as long as the document.
struct EventFields {
  std::string_view ph, name, cat;
  int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;
  bool has_ts = false, has_dur = false;
  int64_t stream = -1, correlation = -1, device = -1;
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// Kineto writes pid/tid as numbers; some writers use strings ("stream 7"): take their digits.
int64_t id_of(od::value& v) {
  int64_t n = 0;
  if (v.get_int64().get(n) == simdjson::SUCCESS) return n;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::fabs(d) < 9e15) {
    return static_cast<int64_t>(d);
  }
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return 0;
  const size_t first = s.find_first_of("0123456789");
  if (first == std::string_view::npos) return 0;
  for (size_t i = first;
       i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && n < 100000000000000; ++i) {
    n = n * 10 + (s[i] - '0');
  }
  return n;
}

class Reader {
 public:
  Reader(const char* data, size_t len) : data_(data), len_(len) {}
  util::Result<RawTrace> run();

 private:
  simdjson::error_code read_trace_events(od::value events);
  simdjson::error_code read_event(od::object obj, EventFields& ev);
  simdjson::error_code read_args(od::object args, EventFields& ev);
  simdjson::error_code read_number(od::value& v, const char* field, double& out);
  simdjson::error_code keep(const EventFields& ev);
  void read_rank(od::value v);
  void read_device_properties(od::value v);
  uint32_t intern(std::string_view name);
  util::Status error(simdjson::error_code code);

  const char* data_;
  size_t len_;
  od::parser parser_;
  od::document doc_;
  RawTrace raw_;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> ids_;
  std::string problem_;  // what is wrong with the current event, beyond simdjson's code
  bool saw_trace_events_ = false;
  bool in_events_ = false;  // errors inside traceEvents name the event's index
};

util::Status Reader::error(simdjson::error_code code) {
  std::string where;
  const char* at = nullptr;
  if (doc_.current_location().get(at) == simdjson::SUCCESS && at >= data_ && at <= data_ + len_) {
    where = fmt::format("byte {}: ", at - data_);
  }
  std::string what = problem_.empty() ? std::string(simdjson::error_message(code)) : problem_;
  if (in_events_) {
    what = fmt::format("traceEvents[{}]: {}", raw_.events, what);
  }
  return util::invalid_argument(where + what);
}

util::Result<RawTrace> Reader::run() {
  if (auto e =
          parser_
              .iterate(simdjson::padded_string_view(data_, len_, len_ + simdjson::SIMDJSON_PADDING))
              .get(doc_)) {
    if (e == simdjson::CAPACITY) {
      return util::invalid_argument("the trace is larger than the 4 GiB a single parse can take");
    }
    return util::invalid_argument(fmt::format("not JSON: {}", simdjson::error_message(e)));
  }
  od::object top;
  if (auto e = doc_.get_object().get(top)) {
    problem_ = e == simdjson::INCORRECT_TYPE
                   ? "not a Kineto trace: the top level must be a JSON object"
                   : "";
    return error(e);
  }
  for (auto field_result : top) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return error(e);
    const od::raw_json_string key = field.key();
    if (key == "traceEvents") {
      if (auto e = read_trace_events(field.value())) return error(e);
    } else if (key == "distributedInfo") {
      read_rank(field.value());
    } else if (key == "deviceProperties") {
      read_device_properties(field.value());
    }
  }
  if (!saw_trace_events_) {
    return util::invalid_argument("not a Kineto trace: no \"traceEvents\" array at the top level");
  }
  return std::move(raw_);
}

simdjson::error_code Reader::read_trace_events(od::value events) {
  od::array arr;
  if (auto e = events.get_array().get(arr)) {
    problem_ = "\"traceEvents\" must be an array";
    return e;
  }
  saw_trace_events_ = true;
  in_events_ = true;
  for (auto element : arr) {
    od::object obj;
    if (auto e = element.get_object().get(obj)) {
      if (e == simdjson::INCORRECT_TYPE) problem_ = "an event must be a JSON object";
      return e;
    }
    EventFields ev;
    if (auto e = read_event(obj, ev)) return e;
    if (auto e = keep(ev)) return e;
    ++raw_.events;
  }
  in_events_ = false;
  return simdjson::SUCCESS;
}

simdjson::error_code Reader::read_number(od::value& v, const char* field, double& out) {
  if (auto e = v.get_double().get(out)) {
    if (e == simdjson::INCORRECT_TYPE) problem_ = fmt::format("`{}` must be a number", field);
    return e;
  }
  // Beyond ±1e15 µs (31 years) the nanosecond integers below would overflow.
  if (!std::isfinite(out) || std::fabs(out) > 1e15) {
    problem_ = fmt::format("`{}` is out of range ({})", field, out);
    return simdjson::NUMBER_OUT_OF_RANGE;
  }
  return simdjson::SUCCESS;
}

simdjson::error_code Reader::read_event(od::object obj, EventFields& ev) {
  for (auto field_result : obj) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    const od::raw_json_string key = field.key();
    od::value v = field.value();
    simdjson::error_code e = simdjson::SUCCESS;
    if (key == "ph") {
      e = v.get_string().get(ev.ph);
      if (e == simdjson::INCORRECT_TYPE) problem_ = "`ph` must be a string";
    } else if (key == "name") {
      e = v.get_string().get(ev.name);
      if (e == simdjson::INCORRECT_TYPE) problem_ = "`name` must be a string";
    } else if (key == "cat") {
      e = v.get_string().get(ev.cat);
      if (e == simdjson::INCORRECT_TYPE) problem_ = "`cat` must be a string";
    } else if (key == "ts") {
      e = read_number(v, "ts", ev.ts);
      ev.has_ts = true;
    } else if (key == "dur") {
      e = read_number(v, "dur", ev.dur);
      ev.has_dur = true;
    } else if (key == "pid") {
      ev.pid = id_of(v);
    } else if (key == "tid") {
      ev.tid = id_of(v);
    } else if (key == "args") {
      od::object args;
      if (v.get_object().get(args) == simdjson::SUCCESS) e = read_args(args, ev);
    }
    if (e) return e;
  }
  return simdjson::SUCCESS;
}

simdjson::error_code Reader::read_args(od::object args, EventFields& ev) {
  for (auto field_result : args) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return e;
    const od::raw_json_string key = field.key();
    // Other writers may put these under other types; only integers are taken.
    if (key == "stream") {
      if (field.value().get_int64().get(ev.stream)) ev.stream = -1;
    } else if (key == "correlation") {
      if (field.value().get_int64().get(ev.correlation)) ev.correlation = -1;
    } else if (key == "device") {
      if (field.value().get_int64().get(ev.device)) ev.device = -1;
    }
  }
  return simdjson::SUCCESS;
}

simdjson::error_code Reader::keep(const EventFields& ev) {
  if (ev.ph != "X") return simdjson::SUCCESS;
  ++raw_.complete_events;
  if (!ev.has_ts || !ev.has_dur) {
    problem_ = fmt::format("a complete (\"X\") event needs `ts` and `dur` (name \"{}\")",
                           ev.name.substr(0, 60));
    return simdjson::TAPE_ERROR;
  }
  if (ev.dur < 0) {
    problem_ = fmt::format("`dur` must be >= 0 (got {})", ev.dur);
    return simdjson::NUMBER_OUT_OF_RANGE;
  }
  const int64_t ts = std::llround(ev.ts * 1000);
  const int64_t dur = std::llround(ev.dur * 1000);
  const bool annotation = ev.cat == "gpu_user_annotation";
  const bool gpu_cat = iequals(ev.cat, "kernel") || iequals(ev.cat, "gpu_memcpy") ||
                       iequals(ev.cat, "gpu_memset") || iequals(ev.cat, "memcpy") ||
                       iequals(ev.cat, "memset");
  const bool runtime = ev.cat == "cuda_runtime" || ev.cat == "cuda_driver" || ev.cat == "Runtime";
  if (gpu_cat || (ev.stream >= 0 && !annotation && !runtime)) {
    const uint32_t name = intern(ev.name);
    KernelClass kind = raw_.info[name].kind;
    if (ev.cat.find("mem") != std::string_view::npos ||
        ev.cat.find("Mem") != std::string_view::npos) {
      kind = KernelClass::Memory;
    }
    raw_.gpu.push_back(GpuEvent{.ts_ns = ts,
                                .dur_ns = dur,
                                .device = ev.device >= 0 ? ev.device : ev.pid,
                                .stream = ev.stream >= 0 ? ev.stream : ev.tid,
                                .correlation = ev.correlation,
                                .name = name,
                                .kind = kind});
    return simdjson::SUCCESS;
  }
  if (runtime) {
    if (ev.correlation >= 0) {
      raw_.runtime.push_back(RuntimeCall{
          .correlation = ev.correlation, .ts_ns = ts, .dur_ns = dur, .name = intern(ev.name)});
    }
    return simdjson::SUCCESS;
  }
  if (annotation) return simdjson::SUCCESS;
  // CPU ranges: only step and data-loader names are kept, checked cheaply before interning.
  if (ev.name.starts_with("ProfilerStep#") || ev.name.starts_with("enumerate(DataLoader)")) {
    const NameInfo& info = raw_.info[intern(ev.name)];
    if (info.profiler_step >= 0) raw_.steps.push_back({ts, dur, info.profiler_step});
    if (info.data_loader) raw_.loaders.push_back({ts, dur, -1});
  }
  return simdjson::SUCCESS;
}

void Reader::read_rank(od::value v) {
  od::object obj;
  if (v.get_object().get(obj)) return;
  for (auto field_result : obj) {
    od::field field;
    if (std::move(field_result).get(field)) return;
    int64_t rank = 0;
    if (field.key() == "rank" && field.value().get_int64().get(rank) == simdjson::SUCCESS) {
      raw_.rank = rank;
    }
  }
}

void Reader::read_device_properties(od::value v) {
  od::array arr;
  if (v.get_array().get(arr)) return;
  for (auto element : arr) {
    od::object obj;
    if (element.get_object().get(obj)) return;
    for (auto field_result : obj) {
      od::field field;
      if (std::move(field_result).get(field)) return;
      int64_t major = 0;
      if (field.key() == "computeMajor" &&
          field.value().get_int64().get(major) == simdjson::SUCCESS && major >= 0 && major < 100) {
        const int cc = static_cast<int>(major);
        raw_.compute_capability =
            raw_.compute_capability ? std::min(*raw_.compute_capability, cc) : cc;
      }
    }
  }
}

uint32_t Reader::intern(std::string_view name) {
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(raw_.names.size());
  raw_.names.emplace_back(name);
  raw_.info.push_back(describe_name(name));
  ids_.emplace(std::string(name), id);
  return id;
}

}  // namespace

}  // namespace trainyard::telemetry::kineto_internal

namespace trainyard::telemetry {

std::string kineto_json_backend() {
  // Stage 1 (indexing) is dispatched at run time to the best kernel of this CPU; On-Demand
  // navigation is compiled in with the kernel the build flags allow.
  return fmt::format("simdjson {}.{}.{} ({} indexing, {} navigation)",
                     static_cast<int>(simdjson::SIMDJSON_VERSION_MAJOR),
                     static_cast<int>(simdjson::SIMDJSON_VERSION_MINOR),
                     static_cast<int>(simdjson::SIMDJSON_VERSION_REVISION),
                     simdjson::get_active_implementation()->name(),
                     simdjson::builtin_implementation()->name());
}

}  // namespace trainyard::telemetry

namespace trainyard::telemetry::kineto_internal {

util::Result<RawTrace> parse_kineto(const char* data, size_t len) {
  Reader reader(data, len);
  return reader.run();
}

}  // namespace trainyard::telemetry::kineto_internal
