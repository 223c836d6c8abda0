// `trainyard run --gpus 2 -- python train.py`: a job spec from flags, for when writing a YAML
// file is more than the job needs. The spec is built as JSON in the same Kubernetes shape as a
// file, so the server validates it with the same parser and the same messages.
#include <iostream>

#include <fmt/format.h>

#include "cli/api_reply.h"
#include "cli/client.h"
#include "cli/job_lookup.h"
#include "cli/output.h"
#include "cli/time_limit_option.h"
#include "model/job_array.h"
#include "model/label_selector.h"

namespace trainyard::cli {
namespace {

// A DNS-label-like default name from the command: "python3 train.py" -> "train-py".
std::string default_name(const std::vector<std::string>& command) {
  std::string base = command.empty() ? "job" : command.back();
  if (command.size() > 1 && command[0].find("python") != std::string::npos) base = command[1];
  if (const size_t slash = base.rfind('/'); slash != std::string::npos)
    base = base.substr(slash + 1);
  std::string out;
  for (char c : base) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::isalnum(static_cast<unsigned char>(l))) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) out = "job";
  if (out.find_first_not_of("0123456789-") == std::string::npos) out = "job-" + out;  // not an id
  return out.substr(0, 50);
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  struct Opts {
    ClientOptions client;
    std::string name, team, priority_class = "normal", gpu_model, cpu, memory, workdir, gpus = "0",
                            checkpoint_dir;
    int workers = 1, backoff_limit = 3, grace = 30;
    bool not_preemptible = false, quiet = false;
    std::vector<std::string> env, depends_on, command, labels;
    std::string idempotency_key;
    std::string time_limit;  // --time
    std::string array;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd =
      app.add_subcommand("run", "Submit a job given by flags: run --gpus 2 -- CMD ARGS...");
  cmd->add_option("--gpus", o->gpus, "GPUs per worker (whole, or a fraction like 0.5)")
      ->capture_default_str();
  cmd->add_option("--name", o->name, "Job name (default: from the command)");
  cmd->add_option("--team", o->team, "Team (default: the token's team, or default)");
  cmd->add_option("--workers", o->workers, "Gang size")->check(CLI::Range(1, 1024));
  cmd->add_option("--priority-class", o->priority_class, "low, normal or high")
      ->capture_default_str();
  cmd->add_option("--gpu-model", o->gpu_model,
                  "GPU model, or a comma-separated list of models any of which will do, e.g. "
                  "H100-80GB or A100-80GB,H100-80GB");
  cmd->add_option("--cpu", o->cpu, "CPU per worker, e.g. 4 or 500m");
  cmd->add_option("--memory", o->memory, "Memory per worker, e.g. 16Gi");
  cmd->add_option("--env", o->env, "NAME=VALUE for the workers; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--workdir", o->workdir, "Working directory of the workers");
  cmd->add_option("--depends-on", o->depends_on,
                  "Start after this job (name or id) succeeded; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--backoff-limit", o->backoff_limit, "Retries after failures")
      ->capture_default_str();
  cmd->add_option("--grace", o->grace, "Seconds between the preemption notice and SIGKILL")
      ->capture_default_str();
  cmd->add_option("--checkpoint-dir", o->checkpoint_dir,
                  "Absolute directory for the job's checkpoints, given to the workers as "
                  "TRAINYARD_CHECKPOINT_DIR (default: checkpoints/<id>/ in the server's state "
                  "directory)");
  cmd->add_flag("--not-preemptible", o->not_preemptible, "Never preempt this job");
  cmd->add_option("--label", o->labels,
                  "key=value for metadata.labels (ls -l selects by them); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--array", o->array,
                  "A job array in Slurm's syntax: 0-99, 1,3,5 or 0-15:4, with %N to run at most "
                  "N tasks at once (0-99%10); one job per index, named NAME-<index>, with "
                  "TRAINYARD_ARRAY_INDEX and TRAINYARD_ARRAY_JOB_ID set");
  add_time_limit_option(*cmd, o->time_limit);
  cmd->add_flag("-q,--quiet", o->quiet, "Print only the job id");
  add_idempotency_option(*cmd, o->idempotency_key);
  cmd->add_option("command", o->command, "The command after --")->required();
  add_client_options(*cmd, o->client);
  return [o] {
    using nlohmann::json;
    if (!o->idempotency_key.empty()) {
      if (auto st = check_idempotency_key(o->idempotency_key); !st.is_ok())
        return report("run", st);
    }
    if (!o->array.empty()) {
      if (auto a = model::parse_array_spec(o->array); !a.is_ok())
        return report("run", util::invalid_argument("--array " + a.status().message()));
    }
    json limits = json::object();
    if (o->gpus != "0") {
      double g = 0;
      try {
        g = std::stod(o->gpus);
      } catch (const std::exception&) {
        return report("run", util::invalid_argument("--gpus must be a number, got " + o->gpus));
      }
      if (g == static_cast<double>(static_cast<int64_t>(g))) {
        limits["nvidia.com/gpu"] = static_cast<int64_t>(g);
      } else {
        limits["nvidia.com/gpu"] = o->gpus;
      }
    }
    if (!o->cpu.empty()) limits["cpu"] = o->cpu;
    if (!o->memory.empty()) limits["memory"] = o->memory;
    json env = json::array();
    for (const auto& kv : o->env) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        return report("run", util::invalid_argument("--env must be NAME=VALUE, got " + kv));
      env.push_back({{"name", kv.substr(0, eq)}, {"value", kv.substr(eq + 1)}});
    }
    json tmpl = {{"command", json::array({o->command[0]})},
                 {"args", std::vector<std::string>(o->command.begin() + 1, o->command.end())},
                 {"env", env},
                 {"resources", {{"limits", limits}}}};
    if (!o->workdir.empty()) tmpl["workingDir"] = o->workdir;
    json spec = {{"workers", o->workers},
                 {"priorityClass", o->priority_class},
                 {"preemptible", !o->not_preemptible},
                 {"backoffLimit", o->backoff_limit},
                 {"checkpoint", {{"gracePeriodSeconds", o->grace}}},
                 {"template", tmpl}};
    if (!o->checkpoint_dir.empty()) spec["checkpoint"]["dir"] = o->checkpoint_dir;
    if (auto st = apply_time_limit(o->time_limit, spec); !st.is_ok()) return report("run", st);
    if (!o->team.empty()) spec["team"] = o->team;
    if (!o->array.empty()) spec["array"] = o->array;
    if (!o->depends_on.empty()) spec["dependsOn"] = o->depends_on;
    if (!o->gpu_model.empty()) spec["nodeSelector"] = {{"trainyard.dev/gpu.product", o->gpu_model}};
    json labels = json::object();
    for (const auto& kv : o->labels) {
      auto label = model::parse_label_assignment(kv);
      if (!label.is_ok()) return report("run", label.status());
      labels[label->first] = label->second;
    }
    const json doc = {
        {"apiVersion", "trainyard.dev/v1"},
        {"kind", "Job"},
        {"metadata",
         {{"name", o->name.empty() ? default_name(o->command) : o->name}, {"labels", labels}}},
        {"spec", spec}};
    ApiClient api(o->client);
    const std::string path = "/api/v1/jobs?file=command-line";
    auto r = api.post_idempotent(
        path, doc.dump(), "application/json",
        o->idempotency_key.empty() ? new_idempotency_key() : o->idempotency_key);
    if (!r.is_ok()) return report("run", r.status());
    auto reply = read_reply<model::SubmitReplyView>(*r, "POST " + path);
    if (!reply.is_ok()) return report("run", reply.status());
    print_submitted(*reply, o->quiet);
    return kExitOk;
  };
}

}  // namespace trainyard::cli
