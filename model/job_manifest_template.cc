// spec.template of a job manifest: the process (command, args, env, workingDir) and the
// per-worker resource limits (whole or fractional GPUs, one MIG slice, CPU, memory).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "model/accelerator.h"
#include "model/internal/manifest_reader.h"
#include "model/node.h"
#include "model/quantity.h"

namespace trainyard::model::internal {
namespace {

constexpr std::string_view kGpuKey = "nvidia.com/gpu";
constexpr std::string_view kMigPrefix = "nvidia.com/mig-";
constexpr std::string_view kReservedEnvPrefix = "TRAINYARD_";
constexpr std::string_view kSdkEnvPrefix = "TRAINYARD_TUNE_";
// Linux refuses an execve whose argument or environment string, with its NUL, is longer than
// MAX_ARG_STRLEN (32 pages = 131072 bytes): such a job would only fail at launch with E2BIG.
constexpr size_t kMaxExecString = 131072;
// The spec's share of execve's total (each string, its NUL and a pointer). Linux allows a quarter
// of the stack limit, 2 MiB under the usual 8 MiB; the rest is left for the server's environment,
// the wrapper's own arguments and trainyard's variables.
constexpr size_t kMaxExecTotal = size_t{1} << 20;
constexpr size_t kExecPointerBytes = sizeof(char*);
constexpr std::string_view kLargeDataFix = "pass large data in a file and its path as the argument";
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
  // The training SDK's own settings (trainyard.tune's pinned plan) are the job's to set.
  if (s.starts_with(kSdkEnvPrefix)) return false;
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
  TemplateReader(const ManifestReader& r, ManifestSource source, JobManifest& m)
      : r_(r), current_rules_(source == ManifestSource::Submission), m_(m) {}

  util::Status read(const Field& tmpl) {
    TY_ASSIGN_OR_RETURN(Fields f,
                        r_.fields(tmpl, {"command", "args", "env", "workingDir", "resources"}));
    const Field* command = find(f, "command");
    if (command == nullptr) return r_.missing(tmpl, "command", "add command: [<program>, <arg>]");
    TY_RETURN_IF_ERROR(exec_string_sizes(*command));
    TY_RETURN_IF_ERROR(read_command(*command));
    count_arguments(m_.process.command);
    if (const Field* args = find(f, "args")) {
      TY_RETURN_IF_ERROR(exec_string_sizes(*args));
      TY_ASSIGN_OR_RETURN(m_.process.args, r_.string_list(*args));
      count_arguments(m_.process.args);
    }
    if (const Field* env = find(f, "env")) TY_RETURN_IF_ERROR(read_env(*env));
    if (current_rules_ && exec_bytes_ > kMaxExecTotal) {
      return r_.error(
          tmpl,
          fmt::format("{}: command, args and env take {} bytes in execve (each string, its "
                      "NUL and its {}-byte pointer); at most {} are accepted, so that the "
                      "worker can be started ({})",
                      tmpl.path, exec_bytes_, kExecPointerBytes, kMaxExecTotal, kLargeDataFix));
    }
    if (const Field* dir = find(f, "workingDir")) {
      TY_ASSIGN_OR_RETURN(m_.process.working_dir, r_.string(*dir));
      if (!m_.process.working_dir.empty() && m_.process.working_dir.front() != '/')
        return r_.invalid(*dir, "an absolute path (starting with /)");
      if (current_rules_ && m_.process.working_dir.size() >= kMaxPathBytes)
        return r_.invalid(*dir, fmt::format("a path of at most {} bytes", kMaxPathBytes - 1),
                          "Linux's PATH_MAX; a worker could not start there");
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

  // Each string of `list` must fit in one execve argument. Checked before the strings are read,
  // so that this error, with its fix, comes before the reader's general string limit.
  util::Status exec_string_sizes(const Field& list) const {
    if (!current_rules_ || !list.value.IsSequence()) return util::Status::ok();
    TY_ASSIGN_OR_RETURN(std::vector<Field> items, r_.items(list, ""));
    for (const Field& item : items) {
      const size_t size = item.value.IsScalar() ? item.value.Scalar().size() : 0;
      if (size + 1 <= kMaxExecString) continue;
      return r_.invalid(
          item, fmt::format("an argument of at most {} bytes", kMaxExecString - 1),
          fmt::format("it has {} bytes; Linux refuses longer ones (MAX_ARG_STRLEN, {} bytes with "
                      "the NUL); {}",
                      size, kMaxExecString, kLargeDataFix));
    }
    return util::Status::ok();
  }

  // Adds what `values` (read from a list whose sizes were checked) take in execve.
  void count_arguments(const std::vector<std::string>& values) {
    for (const std::string& v : values) exec_bytes_ += v.size() + 1 + kExecPointerBytes;
  }

  // Kubernetes' list of {name, value}, or a plain NAME: value mapping.
  util::Status read_env(const Field& env) {
    if (env.value.IsMap()) {
      TY_ASSIGN_OR_RETURN(std::vector<Field> entries, r_.entries(env));
      for (const Field& e : entries) {
        TY_RETURN_IF_ERROR(add_env(env, Field{e.path, e.key, e.key}, e));
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
      TY_RETURN_IF_ERROR(
          add_env(env, *name, value != nullptr ? *value : Field{item.path + ".value", {}, {}}));
    }
    return util::Status::ok();
  }

  util::Status add_env(const Field& env, const Field& name_field, const Field& value_field) {
    TY_RETURN_IF_ERROR(env_entry_size(name_field, value_field));
    TY_ASSIGN_OR_RETURN(std::string name, r_.string(name_field));
    if (!is_env_name(name)) {
      const std::string want = "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)";
      if (env.value.IsSequence()) return r_.invalid(name_field, want);
      // A key of the NAME: value form is not a path segment when it is not a name (it may hold
      // spaces or dots), so the error names the mapping and quotes the key.
      return r_.error(name_field, fmt::format("{}: {} is not {}", env.path,
                                              describe_yaml(name_field.value), want));
    }
    if (is_reserved_env(name)) {
      return r_.invalid(name_field, "a variable trainyard does not set itself",
                        "trainyard sets TRAINYARD_* (except the SDK's TRAINYARD_TUNE_*), "
                        "CUDA_VISIBLE_DEVICES, WORLD_SIZE, RANK, "
                        "LOCAL_RANK, MASTER_ADDR and MASTER_PORT for each worker");
    }
    if (!env_names_.insert(name).second) {
      return r_.error(name_field, fmt::format("{}: environment variable {} is set twice",
                                              name_field.path, name));
    }
    std::string value;
    if (value_field.value && !value_field.value.IsNull()) {
      TY_ASSIGN_OR_RETURN(value, r_.string(value_field));
    }
    exec_bytes_ += name.size() + 1 + value.size() + 1 + kExecPointerBytes;
    m_.process.env.emplace_back(std::move(name), std::move(value));
    return util::Status::ok();
  }

  // NAME=value and its NUL must fit in one execve string; checked on the text as written, before
  // the reader's general string limit.
  util::Status env_entry_size(const Field& name_field, const Field& value_field) const {
    if (!current_rules_) return util::Status::ok();
    auto size_of = [](const Field& f) {
      return f.value && f.value.IsScalar() ? f.value.Scalar().size() : 0;
    };
    const size_t value_size =
        value_field.value && !value_field.value.IsNull() ? size_of(value_field) : 0;
    const size_t entry = size_of(name_field) + 1 + value_size + 1;
    if (entry <= kMaxExecString) return util::Status::ok();
    const Field& at = value_size == 0 ? name_field : value_field;
    return r_.invalid(
        at, fmt::format("a variable whose NAME=value has at most {} bytes", kMaxExecString - 1),
        fmt::format("it has {} bytes; Linux refuses longer ones (MAX_ARG_STRLEN, {} bytes with "
                    "the NUL); {}",
                    entry - 1, kMaxExecString, kLargeDataFix));
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

  // Whole GPUs 0..16, or a fraction of one GPU in steps of 0.001, written as plain decimal
  // digits: "-0", "+1", "1e0" or " 1" are mistakes to point out, not numbers to guess at.
  util::Status read_gpus(const Field& e) {
    const std::string want =
        fmt::format("a whole number of GPUs from 0 to {} or a fraction of one GPU such as 0.5",
                    kMaxGpusPerNode);
    if (!e.value.IsScalar()) return r_.invalid(e, want);
    const std::string& text = e.value.Scalar();
    const PlainDecimal d = parse_plain_decimal(text);
    if (!d.ok) {
      const bool numeric =
          std::any_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
      return r_.invalid(e, want,
                        numeric ? "write plain decimal digits such as 2 or 0.5: no sign, exponent, "
                                  "hex or spaces"
                                : "");
    }
    if (d.milli > int64_t{kMaxGpusPerNode} * kMilliPerGpu) {
      return r_.invalid(e, want,
                        fmt::format("a worker runs on one node, which has at most {} GPUs; ask "
                                    "for more workers instead, e.g. workers: 4 with {}: 8",
                                    kMaxGpusPerNode, kGpuKey));
    }
    if (d.too_fine) return r_.invalid(e, want, "fractions go in steps of 0.001");
    if (d.milli % kMilliPerGpu == 0) {
      m_.spec.worker.gpus = static_cast<int>(d.milli / kMilliPerGpu);
    } else if (d.milli < kMilliPerGpu) {
      m_.spec.worker.gpu_milli = GpuMilli(d.milli);
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
  const bool current_rules_;  // false for a stored spec: size rules added later are skipped
  JobManifest& m_;
  std::set<std::string, std::less<>> env_names_;
  size_t exec_bytes_ = 0;  // execve's count for command, args and env so far
};

}  // namespace

util::Status read_template(const ManifestReader& r, ManifestSource source, const Field& tmpl,
                           JobManifest& m) {
  return TemplateReader(r, source, m).read(tmpl);
}

}  // namespace trainyard::model::internal
