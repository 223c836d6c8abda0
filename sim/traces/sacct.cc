// Slurm accounting records (`sacct --parsable2 --allocations`), so a Slurm site can replay its
// own history: one allocation row is one job; Account (else User) is the team; the run time is
// End - Start; GPUs come from AllocTRES (else ReqTRES) and are spread over NNodes workers.
// Job steps, jobs that never started or have not ended, and CPU-only jobs are counted in
// Workload::not_replayed. docs/trace-formats.md gives the full mapping.
#include <fmt/format.h>

#include "model/slurm_gres.h"
#include "sim/traces/common.h"
#include "sim/traces/sacct_fields.h"
#include "sim/workload.h"
#include "util/csv_reader.h"
#include "util/read_file.h"

namespace trainyard::sim {
namespace {

constexpr int64_t kMaxNodes = 4096;
constexpr int64_t kMaxGpus = kMaxNodes * model::kMaxGpusPerNode;
// When NNodes is not in the file: gangs of up to 8 GPUs per worker, as the other adapters.
constexpr int kGpusPerNodeWithoutNNodes = 8;

constexpr std::string_view kHeaderExample =
    "JobID|User|Account|Partition|Submit|Start|End|State|AllocTRES|ReqTRES|Timelimit|NNodes";

struct Columns {
  int job_id = -1, user = -1, account = -1, submit = -1, start = -1, end = -1, state = -1;
  int alloc_tres = -1, req_tres = -1, timelimit = -1, nnodes = -1;
};

bool is_not_ended(std::string_view state) {
  return state == "PENDING" || state == "RUNNING" || state == "REQUEUED" || state == "RESIZING" ||
         state == "SUSPENDED";
}

class SacctLoader {
 public:
  SacctLoader(util::CsvReader& csv, Workload& w, const TraceOptions& opts)
      : csv_(csv), w_(w), opts_(opts) {}

  util::Status map_header() {
    if (!csv_.has_column("JobID")) {
      return util::invalid_argument(
          fmt::format("{}:1: the first row is not a sacct header (no JobID column); run sacct with "
                      "--parsable2 and without --noheader, or add the header line: {}",
                      csv_.name(), kHeaderExample));
    }
    for (auto [col, name] : {std::pair{&c_.job_id, "JobID"},
                             {&c_.submit, "Submit"},
                             {&c_.start, "Start"},
                             {&c_.end, "End"},
                             {&c_.state, "State"}}) {
      TY_ASSIGN_OR_RETURN(*col, csv_.column(name));
    }
    for (auto [col, name] : {std::pair{&c_.user, "User"},
                             {&c_.account, "Account"},
                             {&c_.alloc_tres, "AllocTRES"},
                             {&c_.req_tres, "ReqTRES"},
                             {&c_.timelimit, "Timelimit"},
                             {&c_.nnodes, "NNodes"}}) {
      if (csv_.has_column(name)) *col = *csv_.column(name);
    }
    if (c_.alloc_tres < 0 && c_.req_tres < 0) {
      return util::invalid_argument(fmt::format(
          "{}:1: the header has neither AllocTRES nor ReqTRES, so the GPUs are unknown; add "
          "them to sacct -o (e.g. {})",
          csv_.name(), kHeaderExample));
    }
    return util::Status::ok();
  }

  util::Status parse_row() {
    const std::string_view id = csv_.field(c_.job_id);
    if (id.empty()) return csv_.error_at(c_.job_id, "the job id is empty");
    // 123.batch, 123.extern, 123.0: steps run inside their job's allocation (the job's own row).
    if (id.find('.') != std::string_view::npos) return not_replayed("job steps");
    const std::string_view state = sacct_state_word(csv_.field(c_.state));
    if (state.empty())
      return csv_.error_at(c_.state, "the state is empty; expected e.g. COMPLETED");
    if (is_not_ended(state)) return not_replayed("still pending or running");
    TY_ASSIGN_OR_RETURN(const auto submit, time_at(c_.submit));
    if (!submit) return csv_.error_at(c_.submit, "the submit time is missing");
    TY_ASSIGN_OR_RETURN(const auto start, time_at(c_.start));
    TY_ASSIGN_OR_RETURN(const auto end, time_at(c_.end));
    if (!start || !end) return not_replayed("never started");
    if (*end < *start) {
      return csv_.error_at(c_.end, fmt::format("the job ends before it starts ({} < {})",
                                               csv_.field(c_.end), csv_.field(c_.start)));
    }
    // A job cancelled while pending can carry Start = End; it never held its GPUs.
    if (*end == *start && state == "CANCELLED") return not_replayed("never started");
    TraceJob j;
    j.name = std::string(id);
    j.submit = util::from_seconds(static_cast<double>(*submit));
    // sacct has one-second resolution: a job that ended in its first second ran under 1 s.
    j.duration = util::seconds(std::max<int64_t>(*end - *start, 1));
    if (util::to_seconds(j.duration) > kMaxTraceDurationSeconds)
      return csv_.error_at(c_.end, "the job ran longer than 1e9 s; check Start and End");
    TY_RETURN_IF_ERROR(parse_gpus(j.spec));
    if (j.spec.total_gpus() == 0) return not_replayed("CPU-only jobs");
    TY_RETURN_IF_ERROR(parse_limit(j));
    j.spec.team = team();
    w_.jobs.push_back(std::move(j));
    return util::Status::ok();
  }

 private:
  util::Status not_replayed(const char* reason) {
    ++w_.not_replayed[reason];
    return util::Status::ok();
  }

  util::Result<std::optional<int64_t>> time_at(int col) const {
    auto t = parse_sacct_time(csv_.field(col));
    if (!t.is_ok()) return csv_.error_at(col, t.status().message());
    if (*t && static_cast<double>(**t) > kMaxTraceTimeSeconds)
      return csv_.error_at(col, "the time is beyond the year 33,000");
    return *t;
  }

  util::Result<TresGpus> tres_at(int col) const {
    if (col < 0) return TresGpus{};
    auto g = parse_tres_gpus(csv_.field(col));
    if (!g.is_ok()) return csv_.error_at(col, g.status().message());
    if (g->count > kMaxGpus)
      return csv_.error_at(col,
                           fmt::format("expected at most {} GPUs, got {}", kMaxGpus, g->count));
    return *g;
  }

  // GPUs the job held (AllocTRES; ReqTRES when AllocTRES is empty), over NNodes workers. The
  // model constraint comes from the request only: a job that asked for any GPU and got an A100
  // may run on any model in the replay.
  util::Status parse_gpus(model::JobSpec& s) const {
    TY_ASSIGN_OR_RETURN(const TresGpus alloc, tres_at(c_.alloc_tres));
    TY_ASSIGN_OR_RETURN(const TresGpus req, tres_at(c_.req_tres));
    const bool alloc_given = c_.alloc_tres >= 0 && !csv_.field(c_.alloc_tres).empty();
    const int64_t gpus = alloc_given ? alloc.count : req.count;
    if (!req.type.empty()) {
      if (auto model = model::accelerator_for_gres_type(req.type, opts_.gres_types)) {
        s.allowed_gpu_models = {*model};
      }
    }
    if (c_.nnodes < 0 || csv_.field(c_.nnodes).empty()) {
      split_into_workers(gpus, kGpusPerNodeWithoutNNodes, s);
      return util::Status::ok();
    }
    TY_ASSIGN_OR_RETURN(const int64_t nodes, get_int_in(csv_, c_.nnodes, 1, kMaxNodes, "nodes"));
    // Even split when NNodes divides the GPUs; otherwise the largest per-worker count up to
    // ceil(GPUs / NNodes) that divides them (6 on 4 nodes -> 3 x 2), keeping the total exact.
    const int64_t per_node = std::min<int64_t>((gpus + nodes - 1) / nodes, model::kMaxGpusPerNode);
    split_into_workers(gpus, static_cast<int>(std::max<int64_t>(per_node, 1)), s);
    return util::Status::ok();
  }

  util::Status parse_limit(TraceJob& j) const {
    if (c_.timelimit < 0) return util::Status::ok();
    auto limit = parse_slurm_timelimit(csv_.field(c_.timelimit));
    if (!limit.is_ok()) return csv_.error_at(c_.timelimit, limit.status().message());
    if (!*limit) return util::Status::ok();
    if (static_cast<double>(**limit) > kMaxTraceDurationSeconds)
      return csv_.error_at(c_.timelimit, "the time limit is longer than 1e9 s");
    j.spec.runtime_limit = util::seconds(**limit);
    j.has_runtime_limit = true;
    return util::Status::ok();
  }

  std::string team() const {
    for (int col : {c_.account, c_.user}) {
      if (col >= 0 && !csv_.field(col).empty()) return std::string(csv_.field(col));
    }
    return std::string(kDefaultTeam);
  }

  util::CsvReader& csv_;
  Workload& w_;
  const TraceOptions& opts_;
  Columns c_;
};

}  // namespace

util::Result<Workload> load_sacct(const std::string& path, const TraceOptions& opts) {
  TY_ASSIGN_OR_RETURN(std::string text, util::read_file(path));
  return load_sacct_from_text(std::move(text), path, opts);
}

util::Result<Workload> load_sacct_from_text(std::string text, const std::string& name,
                                            const TraceOptions& opts) {
  util::CsvReader csv =
      util::CsvReader::from_string(std::move(text), name, {.separator = '|', .quoting = false});
  TY_RETURN_IF_ERROR(csv.read_header());
  Workload w;
  w.source = name;
  SacctLoader loader(csv, w, opts);
  TY_RETURN_IF_ERROR(loader.map_header());
  TY_RETURN_IF_ERROR(for_each_row(csv, w, opts, [&] { return loader.parse_row(); }));
  return w;
}

}  // namespace trainyard::sim
