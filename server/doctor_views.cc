// GET /api/v1/jobs/{id}/doctor: the job doctor (telemetry/doctor.h) run on what the server
// knows of a job: its GPU samples over its life (stored minutes, then recent raw samples) and
// the step metrics its workers reported (rank 0's metrics file of every attempt).
#include <filesystem>

#include <fmt/format.h>

#include "exec/executor.h"
#include "model/api_job_health_views.h"
#include "model/job_manifest.h"
#include "server/control_plane.h"
#include "telemetry/doctor.h"
#include "util/thread_annotations.h"

namespace trainyard::server {

util::Result<nlohmann::json> ControlPlane::job_doctor(util::JobId id, const Principal& who) {
  TY_ASSIGN_OR_RETURN(auto rec, load_record(id));
  TY_RETURN_IF_ERROR(check_job_access(who, id, rec.team));
  telemetry::JobTelemetry t;
  t.job_id = std::to_string(id.value());
  if (auto m = model::parse_stored_job_manifest(rec.manifest_json, "store"); m.is_ok()) {
    const auto& w = m->spec.worker;
    t.gpus = w.gpus * m->spec.workers;
    t.mig = !w.mig_profile.empty();
    if (m->spec.allowed_gpu_models.size() == 1) t.accelerator_model = m->spec.allowed_gpu_models[0];
  }
  // Without samples (a short job) the model still follows from the machine when its GPUs are
  // all of one model, so rules that need only the model and step metrics can speak.
  if (t.accelerator_model.empty() && t.gpus > 0) {
    util::MutexLock lock(mu_);
    for (const auto& n : nodes_) {
      if (n.node.gpu_count == 0) continue;
      if (t.accelerator_model.empty()) {
        t.accelerator_model = n.node.gpu_model;
      } else if (t.accelerator_model != n.node.gpu_model) {
        t.accelerator_model.clear();
        break;
      }
    }
  }
  TY_ASSIGN_OR_RETURN(t.samples, job_samples(id));
  std::vector<std::string> notes;
  // The job controls its metrics files: read them with its own permissions, never root's.
  const auto identity = file_identity(rec.team);
  const exec::ScopedFileIdentity as_job(identity ? &*identity : nullptr);
  for (int attempt = 1; as_job.ok() && attempt <= rec.attempt; ++attempt) {
    const auto file = run_dir(id, attempt, 0) / exec::kMetricsFile;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    auto steps = telemetry::read_step_metrics_file(file.string());
    if (!steps.is_ok()) {
      // A job's own bad line must not hide the GPU evidence: diagnose without it and say so.
      notes.push_back(
          fmt::format("attempt {}: step metrics not used: {}", attempt, steps.status().message()));
      continue;
    }
    t.steps.insert(t.steps.end(), steps->begin(), steps->end());
  }
  model::DoctorReplyView out{.diagnosis = telemetry::to_json(telemetry::diagnose(t)),
                             .name = rec.name,
                             .team = rec.team,
                             .state = std::string(model::job_state_name(rec.state)),
                             .notes = std::move(notes)};
  return model::to_json(out);
}

}  // namespace trainyard::server
