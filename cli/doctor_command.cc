// `trainyard doctor`: what slows a job down and what to do about it. `doctor JOB` asks the server
// for the job's diagnosis (GET /api/v1/jobs/{id}/doctor: rules over its GPU samples and step
// metrics); `doctor --trace trace.json` analyses a PyTorch profiler trace locally; `doctor
// --metrics metrics.jsonl` runs the step-metric rules on a metrics file, also without a server.
#include <iostream>

#include <fmt/format.h>

#include "cli/api_calls.h"
#include "cli/job_lookup.h"
#include "cli/output.h"
#include "model/accelerator.h"
#include "model/api_job_health_views.h"
#include "telemetry/doctor.h"
#include "telemetry/kineto_trace.h"

namespace trainyard::cli {
namespace {

struct DoctorOptions {
  ClientOptions client;
  std::string job, output, metrics, model;
  std::vector<std::string> traces;
  int top = 10;
};

std::string share_cell(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:.1f}%", v.get<double>() * 100) : "-";
}

std::string percent_cell(const nlohmann::json& v) {
  return v.is_number() ? fmt::format("{:.1f}%", v.get<double>()) : "-";
}

// What trainyard.distributed measured and what trainyard.tune chose, when the job reported them.
void print_sdk_stats(const nlohmann::json& s) {
  const auto wait = s.value("comm_wait_share", nlohmann::json());
  const auto bytes = s.value("comm_bytes_per_step", nlohmann::json());
  if (wait.is_number() || bytes.is_number()) {
    std::cout << fmt::format(
        "communication wait {}, {} all-reduced per step\n", share_cell(wait),
        bytes.is_number() ? fmt::format("{:.1f} MB", bytes.get<double>() / 1e6) : "-");
  }
  const auto t = s.value("tune", nlohmann::json());
  if (!t.is_object()) return;
  auto num = [&](const char* key) {
    const auto v = t.value(key, nlohmann::json());
    return v.is_number() ? v.dump() : std::string("-");
  };
  std::string line = fmt::format(
      "tuned by trainyard.tune: micro-batch {} x {} accumulation x {} rank(s) = {} (target {}), "
      "largest that fits {}",
      num("micro_batch"), num("accum_steps"), num("world_size"), num("global_batch"),
      num("target_global_batch"), num("largest_micro_batch"));
  const auto speedup = t.value("speedup", nlohmann::json());
  if (speedup.is_number()) {
    line += fmt::format("; measured {:.2f}x faster per sample than the untuned step",
                        speedup.get<double>());
  }
  if (t.value("channels_last", false)) line += "; channels-last";
  if (t.value("tf32", false)) line += "; TF32";
  std::cout << line << "\n";
}

// Renders to_json(Diagnosis), as the server returns it.
void print_diagnosis(const nlohmann::json& d) {
  const nlohmann::json s = d.value("stats", nlohmann::json::object());
  const std::string job = d.value("job_id", "");
  std::cout << (job.empty() ? "" : "job " + job + ": ") << d.value("verdict", "") << "\n";
  const int devices = s.value("devices", 0);
  const std::string model = s.value("accelerator_model", "");
  std::string looked = fmt::format("{} metric lines", s.value("steps", int64_t{0}));
  if (devices > 0) {
    looked = fmt::format("{} GPU(s){}, {} samples over {:.1f} min, ", devices,
                         model.empty() ? "" : " (" + model + ")", s.value("samples", int64_t{0}),
                         s.value("duration_s", 0.0) / 60) +
             looked;
  }
  std::cout << "looked at: " << looked << "\n";
  if (devices > 0) {
    std::cout << fmt::format("util mean {} (p5 {}, p95 {}), peak memory {}\n",
                             percent_cell(s.value("util_mean_percent", nlohmann::json())),
                             percent_cell(s.value("util_p5_percent", nlohmann::json())),
                             percent_cell(s.value("util_p95_percent", nlohmann::json())),
                             share_cell(s.value("memory_peak_share", nlohmann::json())));
  }
  if (s.value("steps", int64_t{0}) > 0) {
    std::cout << fmt::format("data wait {}, mean step {}, dtype {}\n",
                             share_cell(s.value("data_wait_share", nlohmann::json())),
                             s.value("step_time_mean_s", nlohmann::json()).is_number()
                                 ? fmt::format("{:.4f} s", s["step_time_mean_s"].get<double>())
                                 : "-",
                             s.value("dtype", "").empty() ? "-" : s.value("dtype", ""));
  }
  print_sdk_stats(s);
  for (const auto& f : d.value("findings", nlohmann::json::array())) {
    std::cout << fmt::format("\n[{}] {}: {}\n", f.value("severity", ""), f.value("rule", ""),
                             f.value("summary", ""));
    for (const auto& e : f.value("evidence", nlohmann::json::array())) {
      std::cout << "  - " << cell(e) << "\n";
    }
    std::cout << "  action: " << f.value("action", "") << "\n";
    if (auto sdk = f.find("sdk"); sdk != f.end() && sdk->is_string())
      std::cout << "  with trainyard: " << sdk->get<std::string>() << "\n";
  }
}

int emit(const nlohmann::json& j, const std::string& output, void (*print)(const nlohmann::json&)) {
  if (!print_structured(j, output)) {
    try {
      print(j);
    } catch (const nlohmann::json::exception& e) {  // a reply of another shape than to_json's
      std::cerr << "trainyard doctor: unexpected diagnosis format: " << e.what() << "\n";
      return kExitFailure;
    }
  }
  return kExitOk;
}

int run_traces(const DoctorOptions& o) {
  telemetry::TraceOptions options;
  options.top_kernels = o.top;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& path : o.traces) {
    auto analysis = telemetry::analyze_kineto_trace_file(path, options);
    if (!analysis.is_ok()) {
      std::cerr << "trainyard doctor: " << analysis.status().message() << "\n";
      return kExitBadInput;
    }
    if (o.output.empty()) {
      if (o.traces.size() > 1)
        std::cout << (&path == &o.traces.front() ? "" : "\n") << "== " << path << "\n";
      std::cout << telemetry::format_trace_report(*analysis);
      continue;
    }
    nlohmann::json j = telemetry::to_json(*analysis);
    j["file"] = path;
    all.push_back(std::move(j));
  }
  if (o.output.empty()) return kExitOk;
  return emit(all.size() == 1 ? all[0] : all, o.output, [](const nlohmann::json&) {});
}

int run_metrics(const DoctorOptions& o) {
  auto steps = telemetry::read_step_metrics_file(o.metrics);
  if (!steps.is_ok()) {
    std::cerr << "trainyard doctor: " << steps.status().message() << "\n";
    return kExitBadInput;
  }
  if (!o.model.empty() && model::find_accelerator(o.model) == nullptr) {
    std::cerr << "trainyard doctor: unknown --model '" << o.model
              << "' (use a catalogued model such as H100-80GB, A100-40GB, L4; see "
                 "docs/accelerators.md)\n";
    return kExitBadInput;
  }
  telemetry::JobTelemetry job{.accelerator_model = o.model};
  job.steps = std::move(*steps);
  return emit(telemetry::to_json(telemetry::diagnose(job)), o.output, print_diagnosis);
}

}  // namespace

Runner add_doctor_command(CLI::App& app) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Diagnose what slows a job down: from the server's telemetry (JOB), a PyTorch "
      "profiler trace (--trace) or a metrics file (--metrics)");
  cmd->add_option("job", o->job, "Job id or name (asks the server)");
  cmd->add_option("--trace", o->traces,
                  "PyTorch profiler (Kineto) trace JSON, plain or .gz; analysed locally")
      ->check(CLI::ExistingFile);
  cmd->add_option("--metrics", o->metrics, "A job's metrics.jsonl; its step rules run locally")
      ->check(CLI::ExistingFile);
  cmd->add_option("--model", o->model, "With --metrics: the GPU model it ran on (e.g. H100-80GB)");
  cmd->add_option("--top", o->top, "With --trace: how many kernels to list per device")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "json or yaml");
  add_client_options(*cmd, o->client);
  return [o] {
    if (!o->output.empty() && o->output != "json" && o->output != "yaml")
      return report("doctor", util::invalid_argument("-o must be json or yaml"));
    const int sources = !o->job.empty() + !o->traces.empty() + !o->metrics.empty();
    if (sources != 1) {
      return report("doctor", util::invalid_argument(
                                  "give exactly one of JOB, --trace FILE or --metrics FILE"));
    }
    if (!o->traces.empty()) return run_traces(*o);
    if (!o->metrics.empty()) return run_metrics(*o);
    ApiClient api(o->client);
    auto id = resolve_job(api, o->job);
    if (!id.is_ok()) return report("doctor", id.status());
    auto r = get_reply<model::DoctorReplyView>(api, fmt::format("/api/v1/jobs/{}/doctor", *id));
    if (!r.is_ok()) return report("doctor", r.status());
    if (print_structured(r->raw, o->output)) return kExitOk;
    return emit(r->view.diagnosis, o->output, print_diagnosis);
  };
}

}  // namespace trainyard::cli
