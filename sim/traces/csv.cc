// trainyard's generic CSV trace (docs/trace-formats.md): required submit_time, duration and gpus
// (per worker); optional id, name, workers, team, priority, gpu_model, gpu_milli, mig_profile,
// cpu, memory, runtime_limit, preemptible, checkpoint_interval, depends_on. Unknown columns are
// refused. A job may depend only on rows above it that were submitted no later than it (as in
// Slurm, a dependency must exist at submission), so ids after the stable sort by submit time
// are known at load time and no dependency points forward or out of a --max-jobs prefix.
#include <algorithm>
#include <array>
#include <numeric>
#include <unordered_map>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/quantity.h"
#include "sim/traces/common.h"
#include "sim/traces/csv_columns.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

constexpr int64_t kMaxWorkers = 4096;
constexpr int64_t kMaxPriority = 1'000'000'000;

std::string_view trimmed(std::string_view s) {
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_known_mig_profile(std::string_view profile) {
  for (const auto& acc : model::accelerator_catalog()) {
    if (acc.find_mig_profile(profile) != nullptr) return true;
  }
  return false;
}

// Reads rows into TraceJobs; depends_on holds 1-based indexes into the jobs read so far until
// number_by_submit() turns them into the ids finalize() will assign.
class GenericCsvLoader {
 public:
  GenericCsvLoader(util::CsvReader& csv, Workload& w) : csv_(csv), w_(w) { col_.fill(-1); }

  util::Status map_header();
  util::Status parse_row();
  void number_by_submit();

 private:
  std::string_view cell(CsvColumn c) const { return csv_.field(col_[c]); }
  bool given(CsvColumn c) const { return col_[c] >= 0 && !cell(c).empty(); }
  util::Status parse_gpu_form(model::WorkerRequest& worker) const;
  util::Status parse_resources(model::JobSpec& s) const;
  util::Status parse_policy(TraceJob& j) const;
  util::Status parse_dependencies(TraceJob& j) const;
  util::Result<size_t> find_reference(std::string_view ref) const;
  util::Status register_row(const TraceJob& j);

  util::CsvReader& csv_;
  Workload& w_;
  std::array<int, kCsvColumnCount> col_;
  std::unordered_map<std::string, size_t> by_id_;    // id -> index into w_.jobs
  std::unordered_map<std::string, size_t> by_name_;  // name -> index, or kAmbiguous
  std::vector<int> lines_;                           // source line of each job
  static constexpr size_t kAmbiguous = static_cast<size_t>(-1);
};

util::Status GenericCsvLoader::map_header() {
  std::string known;
  for (auto name : kCsvColumns) known += fmt::format("{}{}", known.empty() ? "" : ", ", name);
  for (int i = 0; i < static_cast<int>(csv_.field_count()); ++i) {
    const std::string_view name = trimmed(csv_.field(i));
    const auto it = std::find(kCsvColumns.begin(), kCsvColumns.end(), name);
    if (it == kCsvColumns.end()) {
      return csv_.error_at(i, fmt::format("unknown column; the generic CSV format has: {}", known));
    }
    const size_t c = static_cast<size_t>(it - kCsvColumns.begin());
    if (col_[c] >= 0) return csv_.error_at(i, "the column appears twice in the header");
    col_[c] = i;
  }
  for (CsvColumn c : {kSubmitTime, kDuration, kGpus}) {
    TY_ASSIGN_OR_RETURN(col_[c], csv_.column(kCsvColumns[c]));
  }
  return util::Status::ok();
}

util::Status GenericCsvLoader::parse_gpu_form(model::WorkerRequest& worker) const {
  TY_ASSIGN_OR_RETURN(const int64_t gpus,
                      get_int_in(csv_, col_[kGpus], 0, model::kMaxGpusPerNode, "GPUs per worker"));
  worker.gpus = static_cast<int>(gpus);
  if (given(kGpuMilli)) {
    TY_ASSIGN_OR_RETURN(const int64_t milli,
                        get_int_in(csv_, col_[kGpuMilli], 0, 999, "milli-GPUs (a share of one)"));
    if (milli > 0 && gpus > 0) {
      return csv_.error_at(col_[kGpuMilli],
                           "a worker takes whole GPUs (gpus) or a share of one "
                           "(gpu_milli), not both; set gpus to 0");
    }
    worker.gpu_milli = model::GpuMilli(milli);
  }
  if (given(kMigProfile)) {
    const std::string_view profile = cell(kMigProfile);
    if (gpus > 0 || worker.gpu_milli.value() > 0) {
      return csv_.error_at(col_[kMigProfile],
                           "a worker takes one MIG instance or GPUs, not "
                           "both; set gpus and gpu_milli to 0");
    }
    if (!is_known_mig_profile(profile)) {
      return csv_.error_at(col_[kMigProfile],
                           fmt::format("unknown MIG profile '{}'; expected a profile such as "
                                       "1g.10gb or 3g.40gb (see docs/accelerators.md)",
                                       profile));
    }
    worker.mig_profile = std::string(profile);
  }
  return util::Status::ok();
}

util::Status GenericCsvLoader::parse_resources(model::JobSpec& s) const {
  if (given(kWorkers)) {
    TY_ASSIGN_OR_RETURN(const int64_t n,
                        get_int_in(csv_, col_[kWorkers], 1, kMaxWorkers, "workers"));
    s.workers = static_cast<int>(n);
  }
  if (given(kGpuModel)) {
    TY_ASSIGN_OR_RETURN(const auto models, split_list(csv_, col_[kGpuModel]));
    for (const auto& m : models)
      s.allowed_gpu_models.push_back(model::canonical_accelerator_name(m));
  }
  if (given(kCpu)) {
    auto cpu = model::parse_cpu(cell(kCpu));
    if (!cpu.is_ok()) return csv_.error_at(col_[kCpu], cpu.status().message());
    s.worker.cpu = *cpu;
  }
  if (given(kMemory)) {
    auto mem = model::parse_bytes(cell(kMemory));
    if (!mem.is_ok()) return csv_.error_at(col_[kMemory], mem.status().message());
    s.worker.memory = *mem;
  }
  return util::Status::ok();
}

util::Status GenericCsvLoader::parse_policy(TraceJob& j) const {
  model::JobSpec& s = j.spec;
  s.team = given(kTeam) ? std::string(cell(kTeam)) : std::string(kDefaultTeam);
  if (given(kPriority)) {
    TY_ASSIGN_OR_RETURN(const int64_t p, get_int_in(csv_, col_[kPriority], -kMaxPriority,
                                                    kMaxPriority, "(higher runs first)"));
    s.priority = static_cast<int>(p);
    s.priority_class = p >= model::kPriorityHigh     ? "high"
                       : p >= model::kPriorityNormal ? "normal"
                                                     : "low";
    j.has_priority = true;
  }
  if (given(kRuntimeLimit)) {
    // Up to the time bound, not the duration bound: finalize()'s rounded limits reach twice
    // the longest duration, and a written workload must load back.
    TY_ASSIGN_OR_RETURN(const double limit, get_time_seconds(csv_, col_[kRuntimeLimit]));
    if (limit <= 0) return csv_.error_at(col_[kRuntimeLimit], "expected seconds > 0");
    s.runtime_limit = util::seconds_f(limit);
    j.has_runtime_limit = true;
  }
  if (given(kPreemptible)) {
    const std::string_view v = cell(kPreemptible);
    if (!iequals(v, "true") && !iequals(v, "false")) {
      return csv_.error_at(col_[kPreemptible], fmt::format("expected true or false, got '{}'", v));
    }
    s.preemptible = iequals(v, "true");
  }
  if (given(kCheckpointInterval)) {
    TY_ASSIGN_OR_RETURN(const double every, get_time_seconds(csv_, col_[kCheckpointInterval]));
    if (every > kMaxTraceDurationSeconds) {
      return csv_.error_at(col_[kCheckpointInterval],
                           fmt::format("expected seconds in 0..{:g}", kMaxTraceDurationSeconds));
    }
    s.checkpoint_interval = util::seconds_f(every);
  }
  return util::Status::ok();
}

util::Result<size_t> GenericCsvLoader::find_reference(std::string_view ref) const {
  const std::string key(ref);
  if (auto it = by_id_.find(key); it != by_id_.end()) return it->second;
  if (auto it = by_name_.find(key); it != by_name_.end()) {
    if (it->second != kAmbiguous) return it->second;
    return csv_.error_at(col_[kDependsOn],
                         fmt::format("'{}' names more than one earlier row; refer to the job by "
                                     "its id",
                                     ref));
  }
  return csv_.error_at(col_[kDependsOn],
                       fmt::format("no row above has id or name '{}' (a job may depend only on "
                                   "rows above it)",
                                   ref));
}

util::Status GenericCsvLoader::parse_dependencies(TraceJob& j) const {
  if (!given(kDependsOn)) return util::Status::ok();
  TY_ASSIGN_OR_RETURN(const auto refs, split_list(csv_, col_[kDependsOn]));
  for (const auto& ref : refs) {
    TY_ASSIGN_OR_RETURN(const size_t idx, find_reference(ref));
    const TraceJob& dep = w_.jobs[idx];
    if (dep.submit > j.submit) {
      return csv_.error_at(
          col_[kDependsOn],
          fmt::format("'{}' (line {}) is submitted at {} s, after this job ({} s); a job may "
                      "depend only on jobs submitted before it",
                      ref, lines_[idx], util::to_seconds(dep.submit), util::to_seconds(j.submit)));
    }
    const util::JobId provisional(static_cast<int64_t>(idx) + 1);
    auto& deps = j.spec.depends_on;
    if (std::find(deps.begin(), deps.end(), provisional) == deps.end()) deps.push_back(provisional);
  }
  return util::Status::ok();
}

util::Status GenericCsvLoader::register_row(const TraceJob& j) {
  const size_t idx = w_.jobs.size();
  if (given(kId)) {
    const std::string id(cell(kId));
    if (auto it = by_id_.find(id); it != by_id_.end()) {
      return csv_.error_at(
          col_[kId], fmt::format("id '{}' is already used on line {}", id, lines_[it->second]));
    }
    by_id_.emplace(id, idx);
  }
  if (!j.name.empty()) {
    auto [it, inserted] = by_name_.emplace(j.name, idx);
    if (!inserted) it->second = kAmbiguous;
  }
  lines_.push_back(csv_.line());
  return util::Status::ok();
}

util::Status GenericCsvLoader::parse_row() {
  TraceJob j;
  TY_ASSIGN_OR_RETURN(const double submit, get_time_seconds(csv_, col_[kSubmitTime]));
  TY_ASSIGN_OR_RETURN(const double duration, get_duration_seconds(csv_, col_[kDuration]));
  j.submit = util::from_seconds(submit);
  j.duration = util::seconds_f(duration);
  if (given(kName)) {
    j.name = std::string(cell(kName));
  } else if (given(kId)) {
    j.name = std::string(cell(kId));
  }
  TY_RETURN_IF_ERROR(parse_gpu_form(j.spec.worker));
  TY_RETURN_IF_ERROR(parse_resources(j.spec));
  TY_RETURN_IF_ERROR(parse_policy(j));
  TY_RETURN_IF_ERROR(parse_dependencies(j));
  TY_RETURN_IF_ERROR(register_row(j));
  w_.jobs.push_back(std::move(j));
  return util::Status::ok();
}

// Applies finalize()'s stable sort by submit time now, so the ids it will assign (1..n in
// this order) are known and depends_on can point at them.
void GenericCsvLoader::number_by_submit() {
  const size_t n = w_.jobs.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return w_.jobs[a].submit < w_.jobs[b].submit; });
  std::vector<int64_t> id_of(n);
  for (size_t pos = 0; pos < n; ++pos) id_of[order[pos]] = static_cast<int64_t>(pos) + 1;
  std::vector<TraceJob> sorted;
  sorted.reserve(n);
  for (size_t pos = 0; pos < n; ++pos) {
    TraceJob j = std::move(w_.jobs[order[pos]]);
    j.id = util::JobId(static_cast<int64_t>(pos) + 1);
    for (auto& dep : j.spec.depends_on) dep = util::JobId(id_of[dep.value() - 1]);
    sorted.push_back(std::move(j));
  }
  w_.jobs = std::move(sorted);
}

}  // namespace

util::Result<Workload> load_csv_trace(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_csv_trace_from_text(std::move(text), path, opts);
}

util::Result<Workload> load_csv_trace_from_text(std::string text, const std::string& name,
                                                const TraceOptions& opts) {
  util::CsvReader csv = util::CsvReader::from_string(std::move(text), name);
  TY_RETURN_IF_ERROR(csv.read_header());
  Workload w;
  w.source = name;
  GenericCsvLoader loader(csv, w);
  TY_RETURN_IF_ERROR(loader.map_header());
  TY_RETURN_IF_ERROR(for_each_row(csv, w, opts, [&] { return loader.parse_row(); }));
  loader.number_by_submit();
  return w;
}

}  // namespace trainyard::sim
