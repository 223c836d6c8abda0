// Client commands about jobs: submit, run, ls, show, logs, cancel. Each talks to the server's
// API (cli/client.h) and prints kubectl-like tables, or JSON/YAML with -o.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/cancel_selection.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/job_lookup.h"
#include "cli/list_output.h"
#include "cli/output.h"
#include "cli/progress_format.h"
#include "cli/selectors.h"
#include "cli/start_format.h"
#include "util/read_file.h"

namespace trainyard::cli {
namespace {

using nlohmann::json;

// "2", "4x2", "0.5", "1g.10gb": what each worker asks for, times the workers.
std::string gpus_cell(const model::JobView& job) {
  if (!job.request) return "0";
  const model::WorkerRequest& w = job.request->resources;
  std::string per;
  if (!w.mig_profile.empty()) {
    per = w.mig_profile;
  } else if (w.gpu_milli.value() > 0 && w.gpus == 0) {
    // As the spec writes the fraction: 0.5, 0.25.
    per = json(static_cast<double>(w.gpu_milli.value()) / model::kMilliPerGpu).dump();
  } else if (w.gpus > 0) {
    per = std::to_string(w.gpus);
  }
  if (per.empty()) return "0";
  const int workers = job.request->workers;
  return workers > 1 ? fmt::format("{}x{}", workers, per) : per;
}

std::string node_cell(const model::JobView& job) {
  if (job.placement.empty()) return "-";
  std::string gpus;
  for (const auto& a : job.placement) {
    if (a.gpu < 0) continue;
    gpus += (gpus.empty() ? "" : ",") + std::to_string(a.gpu);
  }
  return job.placement[0].node + (gpus.empty() ? "" : ":" + gpus);
}

const std::string& waiting_or_reason(const model::JobView& job) {
  return job.waiting ? *job.waiting : job.reason;
}

// `raw` is what the server sent for `jobs`, printed as is for -o json and -o yaml.
int print_jobs(const std::vector<model::JobView>& jobs, const json& raw,
               const std::string& output) {
  if (output == "name") {
    for (const auto& j : jobs) std::cout << "job/" << j.id << "\n";
    return kExitOk;
  }
  if (print_structured(raw, output)) return kExitOk;
  const bool wide = output == "wide";
  std::vector<std::string> header = {"ID", "NAME", "TEAM", "STATE", "ATTEMPT", "GPUS", "AGE"};
  header.insert(header.end(), {"STEP", "RATE", "ETA"});  // progress_format.h
  if (wide) header.insert(header.end(), {"NODE:GPUS", "LABELS", "START", "REASON"});
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    std::vector<std::string> r = {std::to_string(j.id),
                                  j.name,
                                  j.team,
                                  std::string(model::job_state_name(j.state)),
                                  std::to_string(j.attempt),
                                  gpus_cell(j),
                                  age_of(j.submitted)};
    for (auto& c : progress_cells(j.progress)) r.push_back(std::move(c));
    if (wide) {
      r.push_back(node_cell(j));
      r.push_back(labels_cell(j.request ? j.request->labels : model::Labels{}));
      r.push_back(start_cell(j));
      r.push_back(waiting_or_reason(j));
    }
    rows.push_back(std::move(r));
  }
  std::cout << render_table(header, rows);
  return kExitOk;
}

// `ls --start`, as `squeue --start`: pending jobs with their estimated start, soonest first
// (unknown ones last), and why they wait.
int print_starts(const model::JobListView& list, const json& raw_items, const std::string& output) {
  auto key = [](const model::JobView& j) {
    const bool known = j.start_estimate && j.start_estimate->at;
    return known ? *j.start_estimate->at : std::string("~");  // unknown sorts last
  };
  std::vector<size_t> order(list.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return key(list.items[a]) < key(list.items[b]); });
  std::vector<model::JobView> jobs;
  json raw = json::array();
  for (size_t i : order) {
    jobs.push_back(list.items[i]);
    raw.push_back(raw_items[i]);
  }
  if (output != "") return print_jobs(jobs, raw, output);
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    rows.push_back({std::to_string(j.id), j.name, j.team, gpus_cell(j), age_of(j.submitted),
                    start_cell(j), waiting_or_reason(j)});
  }
  std::cout << render_table({"ID", "NAME", "TEAM", "GPUS", "AGE", "START", "REASON"}, rows);
  return kExitOk;
}

Runner add_submit(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::vector<std::string> files;
    bool quiet = false;
    std::string idempotency_key;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("submit", "Submit jobs from YAML or JSON specs (docs/job-spec.md)");
  cmd->add_option("-f,--file", o->files, "Job spec file (YAML or JSON; - for stdin); repeatable")
      ->required();
  cmd->add_flag("-q,--quiet", o->quiet, "Print only the new job ids");
  add_idempotency_option(*cmd, o->idempotency_key);
  add_client_options(*cmd, o->client);
  return [o] {
    if (!o->idempotency_key.empty()) {
      if (auto st = check_idempotency_key(o->idempotency_key); !st.is_ok())
        return report("submit", st);
      if (o->files.size() > 1)
        return report("submit", util::invalid_argument(
                                    "--idempotency-key names one submission; give one -f per "
                                    "command, or leave the option out to get a fresh key per "
                                    "file"));
    }
    ApiClient api(o->client);
    int rc = kExitOk;
    for (const auto& f : o->files) {
      std::stringstream ss;
      if (f == "-") {
        ss << std::cin.rdbuf();
      } else {
        auto text = util::read_file(f);
        if (!text.is_ok()) {
          rc = report("submit", text.status());
          continue;
        }
        ss << *text;
      }
      const std::string label = f == "-" ? "stdin" : f;
      // One key per file, kept across this file's retries only.
      const std::string key =
          o->idempotency_key.empty() ? new_idempotency_key() : o->idempotency_key;
      const std::string path = "/api/v1/jobs?file=" + url_encode(label);
      auto r = api.post_idempotent(path, ss.str(), "application/yaml", key);
      auto reply = r.is_ok() ? read_reply<model::SubmitReplyView>(*r, "POST " + path)
                             : util::Result<model::SubmitReplyView>(r.status());
      if (!reply.is_ok()) {
        rc = report("submit", reply.status());
        if (rc == kExitUnreachable) return rc;
        continue;
      }
      print_submitted(*reply, o->quiet);
    }
    return rc;
  };
}

Runner add_ls(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string state, team, name, output, selector;
    int limit = 100;
    bool watch = false, start = false;
    int64_t array = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("ls", "List jobs, newest first");
  cmd->add_flag("--start", o->start,
                "Pending jobs with their estimated start time, soonest first (squeue --start)");
  cmd->add_option("--state", o->state,
                  "Only jobs in this state: pending, running, succeeded, failed, cancelled, ...");
  cmd->add_option("--team", o->team, "Only jobs of this team");
  cmd->add_option("--name", o->name, "Only jobs with this name");
  cmd->add_option("-l,--selector", o->selector, kSelectorHelp);
  cmd->add_flag("-w,--watch", o->watch,
                "After the list, print a line for each job that changes state (Ctrl-C ends)");
  cmd->add_option("--array", o->array, "Only the tasks of this job array (its id)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--limit", o->limit, "Most jobs to list (1..1000)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, kListOutputHelp);
  add_client_options(*cmd, o->client);
  return [o] {
    if (auto st = check_list_output(o->output); !st.is_ok()) return report("ls", st);
    if (o->start && !o->state.empty() && o->state != "pending")
      return report("ls", util::invalid_argument(fmt::format(
                              "--start lists pending jobs; leave out --state {}", o->state)));
    if (o->start && o->watch)
      return report("ls", util::invalid_argument("--start and --watch do not go together"));
    if (o->start) o->state = "pending";
    std::string q = fmt::format("/api/v1/jobs?limit={}", o->limit);
    if (!o->state.empty()) q += "&state=" + url_encode(o->state);
    if (!o->team.empty()) q += "&team=" + url_encode(o->team);
    if (!o->name.empty()) q += "&name=" + url_encode(o->name);
    auto selector = selector_query(o->selector);
    if (!selector.is_ok()) return report("ls", selector.status());
    q += *selector;
    if (o->array > 0) q += fmt::format("&array={}", o->array);
    ApiClient api(o->client);
    if (o->watch) return watch_jobs(api, q, o->output);
    auto r = get_reply<model::JobListView>(api, q);
    if (!r.is_ok()) return report("ls", r.status());
    if (o->start) return print_starts(r->view, r->raw["items"], o->output);
    return print_jobs(r->view.items, r->raw["items"], o->output);
  };
}

// Cancels every task of array `id`; returns the exit code so far (`rc`) or this failure's.
int cancel_array(ApiClient& api, int64_t id, int rc) {
  auto r =
      post_view<model::ArrayCancelView>(api, fmt::format("/api/v1/arrays/{}/cancel", id), "{}");
  if (!r.is_ok()) return report("cancel", r.status());
  std::cout << fmt::format("array {}: {} tasks cancelled, {} cancelling (notice sent)\n", id,
                           r->cancelled.size(), r->cancelling.size());
  return rc;
}

Runner add_cancel(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::vector<std::string> jobs;
    bool array = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "cancel",
      "Cancel jobs: pending ones at once, running ones after their notice and grace period");
  cmd->add_option("jobs", o->jobs, "Job ids or names (or job/ID as ls -o name prints)");
  auto selection = std::make_shared<CancelSelection>();
  add_cancel_selection_options(*cmd, *selection);
  cmd->add_flag("--array", o->array,
                "The ids are job arrays' ids (an array's first task): cancel every task of each");
  add_client_options(*cmd, o->client);
  return [o, selection] {
    if (const int rc = cancel_selected(o->client, *selection, !o->jobs.empty()); rc >= 0) return rc;
    ApiClient api(o->client);
    int rc = kExitOk;
    for (const auto& ref : o->jobs) {
      auto id = resolve_job(api, ref);
      if (!id.is_ok()) {
        rc = report("cancel", id.status());
        continue;
      }
      if (o->array) {
        rc = cancel_array(api, *id, rc);
        continue;
      }
      auto r = delete_view<model::JobView>(api, fmt::format("/api/v1/jobs/{}", *id));
      if (!r.is_ok()) {
        rc = report("cancel", r.status());
        continue;
      }
      const bool stopping = r->stopping.has_value();
      std::cout << fmt::format(
          "job {} {}\n", *id,
          stopping ? "cancelling (notice sent; stops within its grace period)" : "cancelled");
    }
    return rc;
  };
}

}  // namespace

int print_job_list(const std::vector<model::JobView>& jobs, const nlohmann::json& raw,
                   const std::string& output) {
  return print_jobs(jobs, raw, output);
}

void add_job_commands(CLI::App& app, std::map<std::string, Runner>& runners) {
  runners["submit"] = add_submit(app);
  runners["run"] = add_run_command(app);
  runners["ls"] = add_ls(app);
  runners["show"] = add_show_command(app);
  runners["logs"] = add_logs_command(app);
  runners["cancel"] = add_cancel(app);
  runners["wait"] = add_wait_command(app);
  runners["checkpoints"] = add_checkpoints_command(app);
  add_hold_update_commands(app, runners);
}

}  // namespace trainyard::cli
