// The server config's `executor:` section: `kind: local` (default) or `kind: slurm` with the
// partition, the shared directory and how to reach Slurm (docs/slurm.md). Every value is checked
// here, so a typo stops the server at start with file:line instead of failing every launch.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "model/accelerator.h"
#include "server/config.h"

namespace trainyard::server {
namespace {

util::Status located(const std::string& file, const YAML::Node& n, const std::string& msg) {
  const auto m = n.Mark();
  if (m.is_null()) return util::invalid_argument(fmt::format("{}: {}", file, msg));
  return util::invalid_argument(fmt::format("{}:{}:{}: {}", file, m.line + 1, m.column + 1, msg));
}

util::Result<std::string> text_value(const std::string& file, const YAML::Node& n,
                                     const std::string& what) {
  if (!n.IsScalar() || n.Scalar().empty())
    return located(file, n, fmt::format("executor.{} must be a non-empty string", what));
  return n.Scalar();
}

util::Result<double> seconds(const std::string& file, const YAML::Node& n, const std::string& what,
                             double lo, double hi) {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= lo) || v > hi)
    return located(file, n,
                   fmt::format("executor.{} must be a number of seconds in {}..{}, got '{}'", what,
                               lo, hi, n.IsScalar() ? n.Scalar() : "(not a scalar)"));
  return v;
}

constexpr const char* kKeys =
    "kind, partition, sharedDir, slurmConf, binDir, pollSeconds, startTimeoutSeconds, "
    "commandTimeoutSeconds, defaultMemoryMB, gresTypes, gpuSampler";

}  // namespace

util::Status parse_executor_config(const std::string& file, const YAML::Node& n,
                                   ServerConfig& out) {
  if (!n.IsMap())
    return located(file, n,
                   "executor must be a map like {kind: slurm, partition: gpu, sharedDir: "
                   "/shared/trainyard}");
  ExecutorConfig& e = out.executor;
  for (const auto& kv : n) {
    const auto key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "kind") {
      TY_ASSIGN_OR_RETURN(auto kind, text_value(file, v, "kind"));
      if (kind == "local")
        e.kind = ExecutorKind::Local;
      else if (kind == "slurm")
        e.kind = ExecutorKind::Slurm;
      else
        return located(file, v,
                       fmt::format("executor.kind must be local or slurm, got '{}'", kind));
    } else if (key == "partition") {
      TY_ASSIGN_OR_RETURN(e.slurm.partition, text_value(file, v, "partition"));
    } else if (key == "sharedDir") {
      TY_ASSIGN_OR_RETURN(auto dir, text_value(file, v, "sharedDir"));
      if (dir.front() != '/')
        return located(file, v,
                       fmt::format("executor.sharedDir must be an absolute path (the same on "
                                   "every node), got '{}'",
                                   dir));
      e.slurm.shared_dir = dir;
    } else if (key == "slurmConf") {
      TY_ASSIGN_OR_RETURN(e.slurm.slurm_conf, text_value(file, v, "slurmConf"));
    } else if (key == "binDir") {
      TY_ASSIGN_OR_RETURN(e.slurm.bin_dir, text_value(file, v, "binDir"));
    } else if (key == "pollSeconds") {
      TY_ASSIGN_OR_RETURN(double s, seconds(file, v, "pollSeconds", 0.1, 600));
      e.slurm.poll_interval = util::seconds_f(s);
    } else if (key == "startTimeoutSeconds") {
      TY_ASSIGN_OR_RETURN(double s, seconds(file, v, "startTimeoutSeconds", 1, 86400));
      e.slurm.start_timeout = util::seconds_f(s);
    } else if (key == "commandTimeoutSeconds") {
      TY_ASSIGN_OR_RETURN(double s, seconds(file, v, "commandTimeoutSeconds", 1, 600));
      e.slurm.command_timeout = util::seconds_f(s);
    } else if (key == "defaultMemoryMB") {
      int64_t mb = -1;
      if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, mb) || mb < 0)
        return located(file, v, "executor.defaultMemoryMB must be a whole number of MB >= 0");
      e.slurm.default_memory_mb = mb;
    } else if (key == "gpuSampler") {
      TY_ASSIGN_OR_RETURN(e.slurm.gpu_sampler, text_value(file, v, "gpuSampler"));
      const std::string& g = e.slurm.gpu_sampler;
      if (g != "auto" && g != "none" && g != "nvml" && !g.starts_with("sim:"))
        return located(file, v,
                       fmt::format("executor.gpuSampler must be auto, nvml, none or a sim:... "
                                   "spec like sim:8xH100-80GB, got '{}'",
                                   g));
    } else if (key == "gresTypes") {
      if (!v.IsMap())
        return located(file, v,
                       "executor.gresTypes must map GRES types to models, e.g. {a100x: "
                       "A100-80GB}");
      for (const auto& t : v) {
        const auto type = t.first.as<std::string>();
        if (!t.second.IsScalar() || model::find_accelerator(t.second.Scalar()) == nullptr)
          return located(file, t.second,
                         fmt::format("executor.gresTypes.{} must name a known accelerator such "
                                     "as H100-80GB, A100-80GB, V100-16GB, L4, T4",
                                     type));
        e.slurm.gres_types[type] = t.second.Scalar();
      }
    } else {
      return located(file, kv.first,
                     fmt::format("unknown key 'executor.{}'; allowed: {}", key, kKeys));
    }
  }
  if (e.kind == ExecutorKind::Slurm && e.slurm.shared_dir.empty())
    return located(file, n,
                   "executor.sharedDir is required with kind: slurm: a directory mounted at the "
                   "same path on every node and on the server (run dirs, logs, checkpoints)");
  return util::Status::ok();
}

}  // namespace trainyard::server
