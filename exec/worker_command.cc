#include "exec/internal/worker_command.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "exec/wrapper.h"

namespace trainyard::exec::internal {
namespace {

// An ordered NAME=value list in which setting a name again replaces its entry.
class EnvList {
 public:
  void set(std::string_view name, std::string_view value) {
    std::string entry = fmt::format("{}={}", name, value);
    for (auto& e : entries_) {
      if (has_name(e, name)) {
        e = std::move(entry);
        return;
      }
    }
    entries_.push_back(std::move(entry));
  }
  void erase(std::string_view name) {
    std::erase_if(entries_, [&](const std::string& e) { return has_name(e, name); });
  }
  std::vector<std::string> take() && { return std::move(entries_); }

 private:
  static bool has_name(std::string_view entry, std::string_view name) {
    return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
  }
  std::vector<std::string> entries_;
};

bool has_nul(std::string_view s) {
  return s.find('\0') != std::string_view::npos;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(sep)) + item;
  return out;
}

}  // namespace

util::Status validate_launch(const WorkerLaunch& w) {
  if (w.argv.empty() || w.argv[0].empty()) {
    return util::invalid_argument("worker launch: the command is empty; give at least argv[0]");
  }
  if (w.run_dir.empty()) return util::invalid_argument("worker launch: run_dir is empty");
  if (w.log_cap_bytes < 0) {
    return util::invalid_argument(
        fmt::format("worker launch: log_cap_bytes must be >= 0 (got {})", w.log_cap_bytes));
  }
  for (const auto& arg : w.argv) {
    if (has_nul(arg)) return util::invalid_argument("worker launch: an argument holds a NUL byte");
  }
  for (const auto& [name, value] : w.env) {
    if (name.empty() || name.find('=') != std::string::npos || has_nul(name) || has_nul(value)) {
      return util::invalid_argument(fmt::format(
          "worker launch: env name '{}' is not valid (non-empty, no '=' or NUL)", name));
    }
  }
  for (const auto& device : w.visible_devices) {
    if (device.empty() || device.find(',') != std::string::npos || has_nul(device)) {
      return util::invalid_argument(
          fmt::format("worker launch: visible device '{}' is not a GPU UUID", device));
    }
  }
  return util::Status::ok();
}

std::vector<std::string> wrapper_argv(const std::string& wrapper_path, const WorkerLaunch& w) {
  std::vector<std::string> argv = {
      wrapper_path, kWrapperSubcommand,
      "--run-dir",  w.run_dir.string(),
      "--log-cap",  std::to_string(w.log_cap_bytes),
      "--cwd",      w.working_dir.empty() ? (w.run_dir / kWorkDir).string() : w.working_dir};
  if (!w.checkpoint_dir.empty()) argv.insert(argv.end(), {"--checkpoint-dir", w.checkpoint_dir});
  if (w.run_as) {
    std::vector<std::string> groups;
    for (uint32_t g : w.run_as->groups) groups.push_back(std::to_string(g));
    argv.insert(argv.end(), {"--uid", std::to_string(w.run_as->uid), "--gid",
                             std::to_string(w.run_as->gid), "--groups", join(groups, ",")});
  }
  argv.insert(argv.end(), {"--env-fd", std::to_string(kEnvFd), "--"});
  argv.insert(argv.end(), w.argv.begin(), w.argv.end());
  return argv;
}

std::vector<std::string> worker_environment(const WorkerLaunch& w, char** base) {
  EnvList env;
  for (char** e = base; e && *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string_view::npos && eq > 0) env.set(entry.substr(0, eq), entry.substr(eq + 1));
  }
  env.erase("CUDA_VISIBLE_DEVICES");
  env.erase("TRAINYARD_TOKEN");
  if (w.run_as) {
    // The server's user's session, not the worker's: its sockets would refuse the worker anyway.
    env.erase("XDG_RUNTIME_DIR");
    env.erase("SSH_AUTH_SOCK");
    env.set("USER", w.run_as->user);
    env.set("LOGNAME", w.run_as->user);
    env.set("HOME", w.run_as->home.empty() ? (w.run_dir / kWorkDir).string() : w.run_as->home);
  }
  env.set("TMPDIR", (w.run_dir / kTmpDir).string());
  for (const auto& [name, value] : w.env) env.set(name, value);
  env.set("TRAINYARD_JOB_ID", std::to_string(w.job.value()));
  env.set("TRAINYARD_ATTEMPT", std::to_string(w.attempt));
  env.set("TRAINYARD_RANK", std::to_string(w.rank));
  env.set("TRAINYARD_RUN_DIR", w.run_dir.string());
  if (!w.checkpoint_dir.empty()) env.set("TRAINYARD_CHECKPOINT_DIR", w.checkpoint_dir);
  if (w.mtbf_seconds > 0) env.set("TRAINYARD_MTBF_SECONDS", fmt::format("{:.0f}", w.mtbf_seconds));
  env.set("TRAINYARD_PREEMPT_NOTICE", (w.run_dir / kNoticeFile).string());
  env.set("TRAINYARD_METRICS_FILE", (w.run_dir / kMetricsFile).string());
  env.set("CUDA_VISIBLE_DEVICES", join(w.visible_devices, ","));
  env.set("WORLD_SIZE", std::to_string(w.world_size));
  env.set("RANK", std::to_string(w.rank));
  env.set("LOCAL_RANK", std::to_string(w.local_rank));
  env.set("MASTER_ADDR", w.master_addr);
  if (w.master_port > 0) env.set("MASTER_PORT", std::to_string(w.master_port));
  return std::move(env).take();
}

std::vector<std::string> wrapper_environment(char** base) {
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  for (char** e = base; e && *e; ++e) {
    std::string_view entry(*e);
    for (std::string_view name : {"ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS="}) {
      if (entry.starts_with(name)) env.emplace_back(entry);
    }
  }
  return env;
}

std::string env_block(const std::vector<std::string>& entries) {
  std::string block;
  for (const auto& e : entries) {
    block += e;
    block += '\0';
  }
  return block;
}

std::vector<std::string> parse_env_block(std::string_view block) {
  std::vector<std::string> out;
  while (!block.empty()) {
    size_t end = block.find('\0');
    if (end == std::string_view::npos) end = block.size();
    if (end > 0) out.emplace_back(block.substr(0, end));
    block.remove_prefix(std::min(block.size(), end + 1));
  }
  return out;
}

std::vector<char*> c_string_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace trainyard::exec::internal
