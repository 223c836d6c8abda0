// `trainyard show` (a job's spec, placement, attempts, events and why it waits) and
// `trainyard logs` (a worker's output, optionally followed until the attempt ends).
#include <cstdio>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/job_lookup.h"
#include "cli/list_output.h"
#include "cli/output.h"
#include "cli/progress_format.h"
#include "cli/sparkline.h"
#include "cli/start_format.h"
#include "cli/telemetry_view.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

// trainyard.tune's choice, from its metrics line: "micro-batch 64 x 4 accumulation x 2 ranks =
// 512 (target 512), bf16, channels-last; 4.20x the samples/s of the untuned step".
std::string tuned_text(const json& t) {
  auto num = [&](const char* key) {
    const json v = t.value(key, json());
    return v.is_number() ? v.dump() : std::string("?");
  };
  std::string out =
      fmt::format("micro-batch {} x {} accumulation x {} rank(s) = {} (target {})",
                  num("tune_micro_batch"), num("tune_accum_steps"), num("tune_world_size"),
                  num("tune_global_batch"), num("tune_target_global_batch"));
  if (const json d = t.value("dtype", json()); d.is_string()) out += ", " + d.get<std::string>();
  if (t.value("tune_channels_last", false)) out += ", channels-last";
  if (t.value("tune_tf32", false)) out += ", TF32";
  if (const json s = t.value("tune_speedup", json()); s.is_number())
    out += fmt::format("; {:.2f}x the samples/s of the untuned step", s.get<double>());
  return out;
}

void print_job_text(const model::JobDetailView& d, const model::JobEventListView& events) {
  auto line = [](const std::string& k, const std::string& v) {
    std::cout << fmt::format("{:<12}{}\n", k + ":", v);
  };
  const model::JobView& j = d.job;
  line("Job", fmt::format("{} ({})", j.id, j.name));
  line("Team", j.team);
  line("Labels", labels_cell(j.request ? j.request->labels : model::Labels{}));
  line("State", std::string(model::job_state_name(j.state)) +
                    (j.stopping ? fmt::format(" (stopping: {})", *j.stopping) : ""));
  line("Attempt", fmt::format("{} (failures: {})", j.attempt, j.failures));
  line("Priority", std::to_string(j.priority));
  line("Submitted", cell(j.submitted));
  line("Started", cell(j.started));
  line("Finished", cell(j.finished));
  line("Reason", j.reason);
  if (j.waiting) line("Waiting", *j.waiting);
  if (const std::string starts = start_text(j); !starts.empty()) line("Starts", starts);
  if (d.metrics) {
    std::string m;
    for (const auto& [k, v] : d.metrics->last.items())
      m += (m.empty() ? "" : " ") + k + "=" + cell(v);
    line("Metrics", fmt::format("attempt {}: {}", d.metrics->attempt, m));
    if (d.metrics->tuned.is_object()) line("Tuned", tuned_text(d.metrics->tuned));
  }
  if (j.progress) {
    const auto p = progress_cells(j.progress);
    line("Progress", fmt::format("step {}, {}, ETA {}", p[0], p[1], p[2]));
  }
  if (d.checkpoint) {
    line("Checkpoint",
         fmt::format("step {} ({:.1f} MiB, {}){}", d.checkpoint->step,
                     static_cast<double>(d.checkpoint->bytes) / (1 << 20), d.checkpoint->created,
                     d.steps_since_checkpoint
                         ? fmt::format("; a stop now loses {} step(s)", *d.steps_since_checkpoint)
                         : ""));
  }
  if (d.utilization) {
    // A summary over the job's life; `GET /api/v1/jobs/{id}/telemetry` has the series.
    const model::UtilizationView& u = *d.utilization;
    auto pct = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.0f}%", *v) : std::string("-");
    };
    auto gib = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.1f}", *v / (1 << 30)) : std::string("-");
    };
    line("GPU use",
         fmt::format("util avg {} (p95 {}), memory max {} of {} GiB, {} sample(s) on {} "
                     "device(s)",
                     pct(u.gpu_util_avg), pct(u.gpu_util_p95), gib(u.memory_used_max_bytes),
                     gib(u.memory_total_bytes), u.samples, u.devices));
  }
  // An ended job keeps where its last attempt ran.
  const bool ended = j.finished.has_value() && !j.placement.empty();
  std::cout << (ended ? "Placement (last attempt):\n" : "Placement:\n");
  if (j.placement.empty()) std::cout << "  (none)\n";
  for (const auto& a : j.placement) {
    std::cout << fmt::format("  worker {} on {} GPU {}{} {}\n", a.worker, a.node, a.gpu,
                             a.mig_profile ? " MIG " + *a.mig_profile : "", a.device.value_or(""));
  }
  std::cout << "Attempts:\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& a : d.attempts) {
    rows.push_back({"  " + std::to_string(a.attempt), cell(a.started), cell(a.ended),
                    a.outcome.empty() ? "running" : a.outcome, std::to_string(a.exit_code)});
  }
  std::cout << render_table({"  ATTEMPT", "STARTED", "ENDED", "OUTCOME", "EXIT"}, rows);
  std::cout << "Spec:\n";
  std::string spec = to_yaml(d.spec);
  for (size_t pos = 0; pos < spec.size();) {
    const size_t nl = spec.find('\n', pos);
    std::cout << "  " << spec.substr(pos, nl - pos) << "\n";
    pos = nl == std::string::npos ? spec.size() : nl + 1;
  }
  std::cout << "Events:\n";
  rows.clear();
  for (const auto& e : events.items) {
    const std::string change = e.from.empty() ? e.to : e.from + " -> " + e.to;
    rows.push_back({"  " + e.time, e.type, change, e.reason});
  }
  std::cout << render_table({"  TIME", "TYPE", "STATE", "REASON"}, rows);
}

}  // namespace

util::Result<int64_t> resolve_job(ApiClient& api, const std::string& ref) {
  if (ref.starts_with("job/")) return resolve_job(api, ref.substr(4));  // as ls -o name prints
  if (!ref.empty() && ref.find_first_not_of("0123456789") == std::string::npos && ref.size() < 19)
    return std::stoll(ref);
  TY_ASSIGN_OR_RETURN(
      auto r, get_view<model::JobListView>(api, "/api/v1/jobs?limit=1&name=" + url_encode(ref)));
  if (r.items.empty())
    return util::not_found(fmt::format("no job named '{}' (see `trainyard ls`)", ref));
  return r.items[0].id;
}

Runner add_show_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string job, output;
    bool ascii = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "show",
      "Show a job: spec, placement, attempts, events, why it still waits, and its per-minute GPU "
      "history");
  cmd->add_option("job", o->job, "Job id or name")->required();
  cmd->add_option("-o,--output", o->output, "json or yaml");
  cmd->add_flag("--ascii", o->ascii,
                "Draw the GPU history in plain ASCII (the default where the locale is not UTF-8)");
  add_client_options(*cmd, o->client);
  return [o] {
    if (!o->output.empty() && o->output != "json" && o->output != "yaml")
      return report("show", util::invalid_argument("-o must be json or yaml"));
    ApiClient api(o->client);
    auto id = resolve_job(api, o->job);
    if (!id.is_ok()) return report("show", id.status());
    auto j = get_reply<model::JobDetailView>(api, fmt::format("/api/v1/jobs/{}", *id));
    if (!j.is_ok()) return report("show", j.status());
    auto ev = get_reply<model::JobEventListView>(api, fmt::format("/api/v1/jobs/{}/events", *id));
    if (!ev.is_ok()) return report("show", ev.status());
    j->raw["events"] = ev->raw["items"];
    if (!print_structured(j->raw, o->output)) {
      print_job_text(j->view, ev->view);
      if (auto st = print_job_gpu_history(api, *id, o->ascii || !utf8_terminal()); !st.is_ok())
        std::cout << "GPU history: unavailable (" << st.message() << ")\n";
    }
    return kExitOk;
  };
}

Runner add_logs_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string job, since;
    bool follow = false;
    int attempt = 0, rank = 0;
    int64_t tail = -1;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("logs", "Print a job worker's output (stdout and stderr)");
  cmd->add_option("job", o->job, "Job id or name")->required();
  cmd->add_flag("-f,--follow", o->follow, "Keep printing until the attempt ends");
  cmd->add_option("--tail", o->tail, "Only the last N lines (then more with -f)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--since", o->since,
                  "Only lines that arrived in the last 10m, 1h30m, ... or since an RFC 3339 time "
                  "(exact to the second)");
  cmd->add_option("--attempt", o->attempt, "Attempt number (default: the latest that ran)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--rank", o->rank, "Worker rank of a gang")
      ->check(CLI::Range(0, 1023))
      ->capture_default_str();
  add_client_options(*cmd, o->client);
  return [o] {
    auto window = log_window_query(o->since, o->tail);
    if (!window.is_ok()) return report("logs", window.status());
    ApiClient api(o->client);
    auto id = resolve_job(api, o->job);
    if (!id.is_ok()) return report("logs", id.status());
    int attempt = o->attempt;
    if (attempt == 0) {
      const std::string path = fmt::format("/api/v1/jobs/{}", *id);
      auto j = get_view<model::JobDetailView>(api, path);
      if (!j.is_ok()) return report("logs", j.status());
      auto ran = [](const model::JobDetailView& job) { return !job.attempts.empty(); };
      attempt = j->job.attempt;
      if (!ran(*j)) {
        // Never started: say so (and why it waits) rather than print nothing.
        const std::string why = j->job.waiting.value_or("");
        std::fprintf(stderr, "trainyard logs: job %lld (%s) has not started yet%s%s\n",
                     static_cast<long long>(*id), j->job.name.c_str(), why.empty() ? "" : ": ",
                     why.c_str());
        if (!o->follow) {
          std::fprintf(stderr, "(trainyard logs -f waits for it to start)\n");
          return kExitFailure;
        }
        std::fprintf(stderr, "waiting for it to start...\n");
        while (!ran(*j)) {
          if (model::is_terminal(j->job.state)) {
            std::fprintf(stderr, "trainyard logs: job %lld ended %s without running\n",
                         static_cast<long long>(*id),
                         std::string(model::job_state_name(j->job.state)).c_str());
            return kExitFailure;
          }
          std::this_thread::sleep_for(std::chrono::seconds(1));
          j = get_view<model::JobDetailView>(api, path);
          if (!j.is_ok()) return report("logs", j.status());
        }
        attempt = j->job.attempt;
      }
      // Following pins the attempt so that it does not jump to a later one mid-stream.
    }
    int64_t offset = 0;
    bool first = true;
    for (;;) {
      // The window picks where to start; following goes on from the offset it gave.
      auto r = api.get_raw(fmt::format("/api/v1/jobs/{}/logs?attempt={}&rank={}&offset={}{}", *id,
                                       attempt, o->rank, offset,
                                       std::exchange(first, false) ? *window : ""));
      if (!r.is_ok()) return report("logs", r.status());
      std::cout << r->body << std::flush;
      offset = std::stoll(r->headers["X-Trainyard-Next-Offset"]);
      if (!o->follow || r->headers["X-Trainyard-Complete"] == "true") return kExitOk;
      if (r->body.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  };
}

}  // namespace trainyard::cli
