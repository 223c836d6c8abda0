// The server config's `executor:` section: `kind: local` (default) or `kind: slurm` with the
// partition, the shared directory and how to reach Slurm (docs/slurm.md). Every value is checked
// here, so a typo stops the server at start with file:line:column instead of failing every launch.
#include <cstdint>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/yaml_reader.h"
#include "server/config.h"

namespace trainyard::server {
namespace {

using model::YamlField;
using model::YamlFields;
using model::YamlReader;

constexpr std::string_view kExecutorKeys[] = {"kind",
                                              "partition",
                                              "sharedDir",
                                              "slurmConf",
                                              "binDir",
                                              "pollSeconds",
                                              "startTimeoutSeconds",
                                              "commandTimeoutSeconds",
                                              "defaultMemoryMB",
                                              "gresTypes",
                                              "gpuSampler"};

util::Result<util::Duration> seconds(const YamlReader& r, const YamlField& f, double lo,
                                     double hi) {
  TY_ASSIGN_OR_RETURN(const double s, r.number(f, lo, hi, "a number of seconds"));
  return util::seconds_f(s);
}

util::Status parse_gres_types(const YamlReader& r, const YamlField& g, exec::SlurmOptions& slurm) {
  TY_ASSIGN_OR_RETURN(std::vector<YamlField> entries,
                      r.entries(g, "a mapping of GRES types to models, e.g. {a100x: A100-80GB}"));
  for (const YamlField& e : entries) {
    TY_ASSIGN_OR_RETURN(std::string name, r.string(e));
    if (model::find_accelerator(name) == nullptr)
      return r.invalid(e, "a known accelerator", "such as H100-80GB, A100-80GB, V100-16GB, L4, T4");
    slurm.gres_types[e.key.Scalar()] = std::move(name);
  }
  return util::Status::ok();
}

// The Slurm keys that are strings: where to submit and where the shared files live.
util::Status parse_slurm_paths(const YamlReader& r, const YamlFields& f, exec::SlurmOptions& s) {
  if (const YamlField* v = f.get("partition")) {
    TY_ASSIGN_OR_RETURN(s.partition, r.non_empty_string(*v));
  }
  if (const YamlField* v = f.get("sharedDir")) {
    TY_ASSIGN_OR_RETURN(std::string dir, r.non_empty_string(*v));
    if (dir.front() != '/') return r.invalid(*v, "an absolute path", "the same on every node");
    s.shared_dir = std::move(dir);
  }
  if (const YamlField* v = f.get("slurmConf")) {
    TY_ASSIGN_OR_RETURN(s.slurm_conf, r.non_empty_string(*v));
  }
  if (const YamlField* v = f.get("binDir")) {
    TY_ASSIGN_OR_RETURN(s.bin_dir, r.non_empty_string(*v));
  }
  if (const YamlField* v = f.get("gpuSampler")) {
    TY_ASSIGN_OR_RETURN(s.gpu_sampler, r.non_empty_string(*v));
    const std::string& g = s.gpu_sampler;
    if (g != "auto" && g != "none" && g != "nvml" && !g.starts_with("sim:"))
      return r.invalid(*v, "auto, nvml, none or a sim:... spec", "e.g. sim:8xH100-80GB");
  }
  return util::Status::ok();
}

}  // namespace

util::Status parse_executor_config(const YamlReader& r, const YamlField& section,
                                   ServerConfig& out) {
  TY_ASSIGN_OR_RETURN(YamlFields f, r.fields(section, kExecutorKeys));
  ExecutorConfig& e = out.executor;
  if (const YamlField* v = f.get("kind")) {
    TY_ASSIGN_OR_RETURN(const std::string kind, r.non_empty_string(*v));
    if (kind == "local") {
      e.kind = ExecutorKind::Local;
    } else if (kind == "slurm") {
      e.kind = ExecutorKind::Slurm;
    } else {
      return r.invalid(*v, "local or slurm");
    }
  }
  TY_RETURN_IF_ERROR(parse_slurm_paths(r, f, e.slurm));
  if (const YamlField* v = f.get("pollSeconds")) {
    TY_ASSIGN_OR_RETURN(e.slurm.poll_interval, seconds(r, *v, 0.1, 600));
  }
  if (const YamlField* v = f.get("startTimeoutSeconds")) {
    TY_ASSIGN_OR_RETURN(e.slurm.start_timeout, seconds(r, *v, 1, 86400));
  }
  if (const YamlField* v = f.get("commandTimeoutSeconds")) {
    TY_ASSIGN_OR_RETURN(e.slurm.command_timeout, seconds(r, *v, 1, 600));
  }
  if (const YamlField* v = f.get("defaultMemoryMB")) {
    TY_ASSIGN_OR_RETURN(e.slurm.default_memory_mb,
                        r.integer(*v, 0, INT64_MAX, "MB; 0 leaves it to Slurm"));
  }
  if (const YamlField* v = f.get("gresTypes")) TY_RETURN_IF_ERROR(parse_gres_types(r, *v, e.slurm));
  if (e.kind == ExecutorKind::Slurm && e.slurm.shared_dir.empty())
    return r.missing(section, "sharedDir",
                     "kind: slurm needs a directory mounted at the same path on every node and "
                     "on the server (run dirs, logs, checkpoints)");
  return util::Status::ok();
}

}  // namespace trainyard::server
