// spec.template of a job manifest: the process (command, args, env, workingDir) and the
// per-worker resource limits (whole or fractional GPUs, one MIG slice, CPU, memory).
#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/internal/manifest_reader.h"
#include "model/node.h"

namespace trainyard::model::internal {
namespace {

constexpr std::string_view kGpuKey = "nvidia.com/gpu";
constexpr std::string_view kMigPrefix = "nvidia.com/mig-";
constexpr std::string_view kReservedEnvPrefix = "TRAINYARD_";
// Set by trainyard for every worker, so a spec may not set them.
constexpr std::string_view kReservedEnv[] = {"CUDA_VISIBLE_DEVICES", "WORLD_SIZE",  "RANK",
                                             "LOCAL_RANK",           "MASTER_ADDR", "MASTER_PORT"};

const Field* find(const Fields& fields, std::string_view name) {
  auto it = fields.find(name);
  return it == fields.end() ? nullptr : &it->second;
}

// [A-Za-z_][A-Za-z0-9_]*
bool is_env_name(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!(std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c)))) return false;
  }
  return !s.empty();
}

bool is_reserved_env(std::string_view s) {
  return s.starts_with(kReservedEnvPrefix) ||
         std::find(std::begin(kReservedEnv), std::end(kReservedEnv), s) != std::end(kReservedEnv);
}

std::string mig_profiles_of(const Accelerator& a) {
  std::string out;
  for (const MigProfile& p : a.mig_profiles) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out.empty() ? "none" : out;
}

std::string all_mig_profiles() {
  std::vector<std::string_view> names;
  for (const Accelerator& a : accelerator_catalog()) {
    for (const MigProfile& p : a.mig_profiles) {
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
    }
  }
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

class TemplateReader {
 public:
  TemplateReader(const ManifestReader& r, JobManifest& m) : r_(r), m_(m) {}

  util::Status read(const Field& tmpl) {
    TY_ASSIGN_OR_RETURN(Fields f,
                        r_.fields(tmpl, {"command", "args", "env", "workingDir", "resources"}));
    const Field* command = find(f, "command");
    if (command == nullptr) return r_.missing(tmpl, "command", "add command: [<program>, <arg>]");
    TY_RETURN_IF_ERROR(read_command(*command));
    if (const Field* args = find(f, "args")) {
      TY_ASSIGN_OR_RETURN(m_.process.args, r_.string_list(*args));
    }
    if (const Field* env = find(f, "env")) TY_RETURN_IF_ERROR(read_env(*env));
    if (const Field* dir = find(f, "workingDir")) {
      TY_ASSIGN_OR_RETURN(m_.process.working_dir, r_.string(*dir));
      if (!m_.process.working_dir.empty() && m_.process.working_dir.front() != '/')
        return r_.invalid(*dir, "an absolute path (starting with /)");
    }
    if (const Field* res = find(f, "resources")) {
      TY_ASSIGN_OR_RETURN(Fields rf, r_.fields(*res, {"limits"}));
      if (const Field* limits = find(rf, "limits")) TY_RETURN_IF_ERROR(read_limits(*limits));
    }
    return util::Status::ok();
  }

 private:
  util::Status read_command(const Field& command) {
    TY_ASSIGN_OR_RETURN(m_.process.command, r_.string_list(command));
    if (m_.process.command.empty())
      return r_.invalid(command, "a non-empty list", "e.g. [python, train.py]");
    if (m_.process.command.front().empty()) {
      TY_ASSIGN_OR_RETURN(std::vector<Field> items, r_.items(command, ""));
      return r_.invalid(items.front(), "a program name or path");
    }
    return util::Status::ok();
  }

  // Kubernetes' list of {name, value}, or a plain NAME: value mapping.
  util::Status read_env(const Field& env) {
    if (env.value.IsMap()) {
      TY_ASSIGN_OR_RETURN(std::vector<Field> entries, r_.entries(env));
      for (const Field& e : entries) {
        TY_RETURN_IF_ERROR(add_env(Field{e.path, e.key, e.key}, e));
      }
      return util::Status::ok();
    }
    if (!env.value.IsSequence())
      return r_.invalid(env, "a list of {name: NAME, value: text} or a mapping of NAME: text");
    TY_ASSIGN_OR_RETURN(std::vector<Field> items, r_.items(env, ""));
    for (const Field& item : items) {
      TY_ASSIGN_OR_RETURN(Fields f, r_.fields(item, {"name", "value"}));
      const Field* name = find(f, "name");
      if (name == nullptr) return r_.missing(item, "name", "add name: <VARIABLE>");
      const Field* value = find(f, "value");
      TY_RETURN_IF_ERROR(add_env(*name, value != nullptr ? *value : Field{}));
    }
    return util::Status::ok();
  }

  util::Status add_env(const Field& name_field, const Field& value_field) {
    TY_ASSIGN_OR_RETURN(std::string name, r_.string(name_field));
    if (!is_env_name(name))
      return r_.invalid(name_field, "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
    if (is_reserved_env(name)) {
      return r_.invalid(name_field, "a variable trainyard does not set itself",
                        "trainyard sets TRAINYARD_*, CUDA_VISIBLE_DEVICES, WORLD_SIZE, RANK, "
                        "LOCAL_RANK, MASTER_ADDR and MASTER_PORT for each worker");
    }
    for (const auto& [existing, unused] : m_.process.env) {
      if (existing == name)
        return r_.error(name_field, fmt::format("environment variable {} is set twice", name));
    }
    std::string value;
    if (value_field.value && !value_field.value.IsNull()) {
      TY_ASSIGN_OR_RETURN(value, r_.string(value_field));
    }
    m_.process.env.emplace_back(std::move(name), std::move(value));
    return util::Status::ok();
  }

  util::Status read_limits(const Field& limits) {
    TY_ASSIGN_OR_RETURN(std::vector<Field> entries, r_.entries(limits));
    const Field* gpu = nullptr;
    const Field* mig = nullptr;
    for (const Field& e : entries) {
      const std::string& key = e.key.Scalar();
      if (key == kGpuKey) {
        gpu = &e;
        TY_RETURN_IF_ERROR(read_gpus(e));
      } else if (key.starts_with(kMigPrefix)) {
        if (mig != nullptr)
          return r_.error_at(e.key, fmt::format("{}: a worker gets one MIG instance; {} and {} "
                                                "ask for two",
                                                limits.path, mig->key.Scalar(), key));
        mig = &e;
        TY_RETURN_IF_ERROR(read_mig(e, key.substr(kMigPrefix.size())));
      } else if (key == "cpu") {
        TY_ASSIGN_OR_RETURN(std::string text, r_.string(e));
        auto cpu = parse_cpu(text);
        if (!cpu.is_ok()) return r_.invalid(e, "cores (8, 2.5) or milli-cores (500m)");
        m_.spec.worker.cpu = *cpu;
      } else if (key == "memory") {
        TY_ASSIGN_OR_RETURN(std::string text, r_.string(e));
        auto bytes = parse_bytes(text);
        if (!bytes.is_ok())
          return r_.invalid(e, "bytes with an optional suffix Ki, Mi, Gi, Ti, k, M, G or T",
                            "e.g. 32Gi");
        m_.spec.worker.memory = *bytes;
      } else {
        return r_.unknown_field(e, {kGpuKey, "nvidia.com/mig-<profile>", "cpu", "memory"});
      }
    }
    if (gpu != nullptr && mig != nullptr) {
      return r_.error_at(gpu->key, fmt::format("{}: {} and {} cannot be combined (ask for one MIG "
                                               "instance or for GPUs, not both)",
                                               limits.path, kGpuKey, mig->key.Scalar()));
    }
    return util::Status::ok();
  }

  // Whole GPUs 0..16, or a fraction of one GPU in steps of 0.001.
  util::Status read_gpus(const Field& e) {
    const std::string want =
        fmt::format("a whole number of GPUs from 0 to {} or a fraction of one GPU such as 0.5",
                    kMaxGpusPerNode);
    if (!e.value.IsScalar()) return r_.invalid(e, want);
    const std::string& text = e.value.Scalar();
    double gpus = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), gpus);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || !(gpus >= 0))
      return r_.invalid(e, want);
    const double milli = gpus * kMilliPerGpu;
    if (gpus > kMaxGpusPerNode) {
      return r_.invalid(e, want,
                        fmt::format("a worker runs on one node, which has at most {} GPUs; ask "
                                    "for more workers instead, e.g. workers: 4 with {}: 8",
                                    kMaxGpusPerNode, kGpuKey));
    }
    if (std::abs(milli - std::round(milli)) > 1e-6)
      return r_.invalid(e, want, "fractions go in steps of 0.001");
    const int64_t rounded = std::llround(milli);
    if (rounded % kMilliPerGpu == 0) {
      m_.spec.worker.gpus = static_cast<int>(rounded / kMilliPerGpu);
    } else if (rounded < kMilliPerGpu) {
      m_.spec.worker.gpu_milli = GpuMilli(rounded);
    } else {
      return r_.invalid(e, want, "a fraction shares one GPU; ask for whole GPUs above 1");
    }
    return util::Status::ok();
  }

  util::Status read_mig(const Field& e, std::string_view profile) {
    bool known = false;
    for (const Accelerator& a : accelerator_catalog()) known = known || a.find_mig_profile(profile);
    if (!known) {
      return r_.error_at(e.key, fmt::format("{}: unknown MIG profile \"{}\" (known profiles: {})",
                                            e.path, profile, all_mig_profiles()));
    }
    const auto& models = m_.spec.allowed_gpu_models;
    if (!models.empty() && std::none_of(models.begin(), models.end(), [&](const std::string& n) {
          const Accelerator* a = find_accelerator(n);
          return a != nullptr && a->find_mig_profile(profile) != nullptr;
        })) {
      const Accelerator* first = find_accelerator(models.front());
      return r_.error_at(e.key, fmt::format("{}: the selected GPU models do not offer MIG profile "
                                            "\"{}\" ({} offers: {})",
                                            e.path, profile, models.front(),
                                            first ? mig_profiles_of(*first) : "none"));
    }
    if (!e.value.IsScalar() || e.value.Scalar() != "1") {
      return r_.invalid(e, "1",
                        "a worker gets one MIG instance; for more, add workers or ask for "
                        "whole GPUs with nvidia.com/gpu");
    }
    m_.spec.worker.mig_profile = std::string(profile);
    return util::Status::ok();
  }

  const ManifestReader& r_;
  JobManifest& m_;
};

}  // namespace

util::Status read_template(const ManifestReader& r, const Field& tmpl, JobManifest& m) {
  return TemplateReader(r, m).read(tmpl);
}

}  // namespace trainyard::model::internal
