// The wrapper process (see wrapper.h). It is single-threaded: it starts fresh from exec, before
// anything in main() runs, so it may allocate freely around its own fork().
#include "exec/wrapper.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "exec/executor.h"
#include "exec/internal/run_files.h"
#include "exec/internal/worker_command.h"
#include "exec/log_times.h"
#include "telemetry/gpu_sample_json.h"
#include "telemetry/gpu_sampler.h"
#include "util/clock.h"
#include "util/log.h"

extern char** environ;

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;
constexpr int kCannotStart = 127;
// Signals the server sends the whole group to give notice: the worker handles them, the
// wrapper must outlive them to record the outcome.
constexpr int kIgnoredSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};

struct WrapperArgs {
  fs::path run_dir;
  int64_t log_cap = -1;
  std::string cwd;
  std::string checkpoint_dir;   // made by the worker (as its user) when missing
  std::optional<uint32_t> uid;  // the worker's user; unset = the wrapper's own
  uint32_t gid = 0;
  std::vector<gid_t> groups;  // gid first, then the supplementary groups
  int env_fd = -1;            // the worker's environment (env_block); -1 = the wrapper's own
  std::string env_file;       // or a file holding it (under a batch system, on a shared dir)
  // Names copied from the wrapper's own environment into the worker's, over the server's
  // values: what a batch system sets on the node (Slurm's CUDA_VISIBLE_DEVICES, SLURM_JOB_ID).
  std::vector<std::string> pass_env;
  // Under a batch system: sample the GPUs this worker sees (CUDA_VISIBLE_DEVICES) with this
  // sampler spec every sample_ms into run_dir/gpu-samples.json, for the server to read.
  std::string gpu_sampler;
  int sample_ms = 1000;
  std::vector<char*> argv;  // nullptr-terminated
};

template <typename Int>
bool parse_number(std::string_view text, Int& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

util::Status parse_groups(std::string_view text, std::vector<gid_t>& out) {
  while (!text.empty()) {
    const size_t comma = std::min(text.find(','), text.size());
    gid_t g = 0;
    if (!parse_number(text.substr(0, comma), g)) {
      return util::invalid_argument(
          fmt::format("--groups wants numbers like 10,44, got '{}'", text));
    }
    out.push_back(g);
    text.remove_prefix(std::min(text.size(), comma + 1));
  }
  return util::Status::ok();
}

util::Status parse_option(std::string_view flag, std::string_view value, WrapperArgs& a) {
  if (flag == "--run-dir") {
    a.run_dir = value;
  } else if (flag == "--cwd") {
    a.cwd = value;
  } else if (flag == "--checkpoint-dir") {
    a.checkpoint_dir = value;
  } else if (flag == "--log-cap") {
    if (!parse_number(value, a.log_cap) || a.log_cap < 0)
      return util::invalid_argument(fmt::format("--log-cap wants bytes >= 0, got '{}'", value));
  } else if (flag == "--uid") {
    uint32_t uid = 0;
    if (!parse_number(value, uid)) return util::invalid_argument("--uid wants a number");
    a.uid = uid;
  } else if (flag == "--gid") {
    if (!parse_number(value, a.gid)) return util::invalid_argument("--gid wants a number");
  } else if (flag == "--groups") {
    return parse_groups(value, a.groups);
  } else if (flag == "--env-file") {
    a.env_file = value;
  } else if (flag == "--pass-env") {
    while (!value.empty()) {
      const size_t comma = std::min(value.find(','), value.size());
      if (comma > 0) a.pass_env.emplace_back(value.substr(0, comma));
      value.remove_prefix(std::min(value.size(), comma + 1));
    }
  } else if (flag == "--gpu-sampler") {
    a.gpu_sampler = value;
  } else if (flag == "--sample-ms") {
    if (!parse_number(value, a.sample_ms) || a.sample_ms < 10)
      return util::invalid_argument("--sample-ms wants milliseconds >= 10");
  } else if (flag == "--env-fd") {
    if (!parse_number(value, a.env_fd) || a.env_fd < 0)
      return util::invalid_argument("--env-fd wants a file descriptor number");
  } else {
    return util::invalid_argument(fmt::format("unknown option '{}'", flag));
  }
  return util::Status::ok();
}

util::Result<WrapperArgs> parse_args(int argc, char** argv) {
  WrapperArgs a;
  int i = 2;
  for (; i < argc && std::string_view(argv[i]) != "--"; i += 2) {
    if (i + 1 >= argc) return util::invalid_argument(fmt::format("{} needs a value", argv[i]));
    TY_RETURN_IF_ERROR(parse_option(argv[i], argv[i + 1], a));
  }
  for (++i; i < argc; ++i) a.argv.push_back(argv[i]);
  if (a.run_dir.empty() || a.log_cap < 0 || a.argv.empty()) {
    return util::invalid_argument("--run-dir, --log-cap and a command after '--' are required");
  }
  a.groups.insert(a.groups.begin(), a.gid);
  a.argv.push_back(nullptr);
  return a;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// output.log, capped: past the cap one line says so and the rest is dropped (still read, so the
// worker never blocks on a full pipe).
class CappedLog {
 public:
  CappedLog(int fd, int64_t cap, LogTimesWriter& times) : fd_(fd), cap_(cap), times_(times) {}
  void append(const char* data, size_t size) {
    if (truncated_) return;
    size_t room = static_cast<size_t>(cap_ - written_);
    size_t take = std::min(size, room);
    if (take > 0) {
      times_.wrote(static_cast<int64_t>(take), util::WallClock().now());
      write_all(fd_, data, take);
      written_ += static_cast<int64_t>(take);
      last_ = data[take - 1];
    }
    if (take < size) {
      truncated_ = true;
      std::string line = fmt::format("{}[trainyard] log truncated at {} bytes\n",
                                     written_ > 0 && last_ != '\n' ? "\n" : "", cap_);
      write_all(fd_, line.data(), line.size());
    }
  }

 private:
  int fd_;
  int64_t cap_;
  LogTimesWriter& times_;
  int64_t written_ = 0;  // by this run of the wrapper
  bool truncated_ = false;
  char last_ = '\n';
};

// What a server may leave to its children: its open fds, an ignored SIGCHLD (which would make
// waitpid() miss the worker's status), its stdin.
void reset_inherited_state() {
  ::closefrom(3);
  ::signal(SIGCHLD, SIG_DFL);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd > 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::close(null_fd);
  }
}

// In the forked child, as root: becomes the worker's user for good. setuid() from root sets the
// real, effective and saved ids, and no-new-privs keeps setuid binaries from raising them again;
// a setuid(0) that still works afterwards means something went wrong, so the worker never runs.
bool drop_privileges(const WrapperArgs& a) {
  if (::setgroups(a.groups.size(), a.groups.data()) != 0) return false;
  if (::setgid(a.gid) != 0 || ::setuid(*a.uid) != 0) return false;
  if (*a.uid == 0) return true;  // the configuration asked for root workers
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  if (::setuid(0) == 0 || ::geteuid() != *a.uid || ::getegid() != a.gid) return false;
  return true;
}

// mkdir -p, as the worker: only where its user may create directories. Empty when it exists.
std::string make_dirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  return ec ? ec.message() : "";
}

[[noreturn]] void cannot_start(const char* what, const std::string& path, const std::string& why) {
  std::fprintf(stderr, "trainyard: cannot %s '%s': %s (the worker runs as uid %u, gid %u)\n", what,
               path.c_str(), why.c_str(), ::getuid(), ::getgid());
  ::_exit(kCannotStart);
}

// In the forked child: becomes the worker. Never returns.
[[noreturn]] void exec_worker(const WrapperArgs& a, int output_fd, std::vector<char*>& env) {
  ::dup2(output_fd, STDOUT_FILENO);
  ::dup2(output_fd, STDERR_FILENO);
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (a.uid && !drop_privileges(a)) {
    std::fprintf(stderr, "trainyard: cannot run the worker as uid %u, gid %u: %s\n", *a.uid, a.gid,
                 std::strerror(errno));
    ::_exit(kCannotStart);
  }
  ::umask(022);  // the server's 077 is for its own files; a job's follow the usual default
  if (!a.checkpoint_dir.empty()) {
    if (std::string why = make_dirs(a.checkpoint_dir); !why.empty())
      cannot_start("create the checkpoint directory", a.checkpoint_dir, why);
  }
  if (!a.cwd.empty() && ::chdir(a.cwd.c_str()) != 0)
    cannot_start("change to working directory", a.cwd, std::strerror(errno));
  if (!env.empty()) environ = env.data();  // execvp looks the command up in the worker's PATH
  ::execvp(a.argv[0], a.argv.data());
  std::fprintf(stderr, "trainyard: cannot execute '%s': %s\n", a.argv[0], std::strerror(errno));
  ::_exit(kCannotStart);
}

// The worker's environment from the server (env_block in worker_command.h), read before the
// inherited fds are closed. Empty when the server sent none.
std::vector<std::string> read_worker_env(int fd) {
  if (fd < 0) return {};
  std::string block;
  char buf[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    block.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return internal::parse_env_block(block);
}

// Reads what is in the pipe now, without waiting: a background process of the worker may hold
// it open, so EOF may never come. Bounded, in case such a process keeps writing.
void drain_available(int fd, CappedLog& log) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  for (int round = 0; round < 64; ++round) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return;
    log.append(buf, static_cast<size_t>(n));
  }
}

// The worker's GPUs, sampled for the server (docs/slurm.md): the sampler's readings of the
// devices in CUDA_VISIBLE_DEVICES (indices or UUIDs), in that order, written whole to
// run_dir/gpu-samples.json. A sampler that cannot start writes nothing and is not retried.
class GpuReporter {
 public:
  GpuReporter(const WrapperArgs& a) : run_dir_(a.run_dir) {
    if (a.gpu_sampler.empty() || a.gpu_sampler == "none") return;
    const char* visible = ::getenv("CUDA_VISIBLE_DEVICES");
    if (visible == nullptr || *visible == '\0') return;
    std::string_view v(visible);
    while (!v.empty()) {
      const size_t comma = std::min(v.find(','), v.size());
      if (comma > 0) visible_.emplace_back(v.substr(0, comma));
      v.remove_prefix(std::min(v.size(), comma + 1));
    }
    // The wrapper's output is the job's log: the sampler's own notes ("no GPUs: NVML not
    // found") have no place there.
    util::set_log_level("error");
    auto sampler = telemetry::make_gpu_sampler(a.gpu_sampler);
    // "auto" on a node without a driver gives a sampler of no GPUs: nothing to report.
    if (sampler.is_ok() && (*sampler)->kind() != "none") sampler_ = std::move(*sampler);
  }
  bool active() const { return sampler_ != nullptr; }
  void report() {
    const util::Time now = util::WallClock().now();
    auto samples = sampler_->sample(now);
    if (!samples.is_ok()) return;
    nlohmann::json out = nlohmann::json::array();
    for (const auto& want : visible_) {
      for (const auto& s : *samples) {
        const bool match = s.uuid == want || (!s.is_mig && std::to_string(s.index) == want);
        if (match) out.push_back(telemetry::sample_to_json(s));
      }
    }
    const char* node = ::getenv("SLURMD_NODENAME");
    nlohmann::json doc = {
        {"node", node ? node : ""}, {"time_ms", util::to_millis(now)}, {"samples", out}};
    (void)internal::write_file_atomically(run_dir_ / kGpuSamplesFile, doc.dump(), false);
  }

 private:
  fs::path run_dir_;
  std::vector<std::string> visible_;
  telemetry::GpuSamplerPtr sampler_;
};

// Copies the worker's output into the log until the worker exits; returns its wait status.
// SIGCHLD arrives through `child_signal` (a signalfd), so neither event can be missed. With an
// active `gpus`, its readings are written every `sample_ms` meanwhile.
int copy_until_exit(pid_t worker, int output_fd, int child_signal, CappedLog& log,
                    GpuReporter& gpus, int sample_ms) {
  pollfd fds[2] = {{output_fd, POLLIN, 0}, {child_signal, POLLIN, 0}};
  char buf[65536];
  int wstatus = 0;
  util::Duration next_report = util::WallClock::steady_now();
  while (fds[0].fd >= 0) {
    int timeout = -1;
    if (gpus.active()) {
      const util::Duration now = util::WallClock::steady_now();
      if (now >= next_report) {
        gpus.report();
        next_report = now + std::chrono::milliseconds(sample_ms);
      }
      timeout = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next_report - now).count() + 1);
    }
    if (::poll(fds, 2, timeout) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {
      ssize_t n = ::read(output_fd, buf, sizeof buf);
      if (n > 0) log.append(buf, static_cast<size_t>(n));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) fds[0].fd = -1;  // poll skips it
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo info;
      while (::read(child_signal, &info, sizeof info) > 0) {
      }
      if (::waitpid(worker, &wstatus, WNOHANG) == worker) {
        drain_available(output_fd, log);
        return wstatus;
      }
    }
  }
  while (::waitpid(worker, &wstatus, 0) < 0 && errno == EINTR) {
  }
  return wstatus;
}

// Records the outcome for whoever polls the run dir, durably; returns the wrapper's exit code.
int record_exit(const fs::path& run_dir, ExitKind kind, int code) {
  util::Status s = internal::write_file_atomically(run_dir / kExitStatusFile,
                                                   internal::format_exit_status(kind, code), true);
  if (!s.is_ok()) std::fprintf(stderr, "trainyard: %s\n", s.message().c_str());
  return kind == ExitKind::Signaled ? 128 + code : code;
}

int record_wait_status(const fs::path& run_dir, int wstatus) {
  if (WIFSIGNALED(wstatus)) return record_exit(run_dir, ExitKind::Signaled, WTERMSIG(wstatus));
  return record_exit(run_dir, ExitKind::Exited, WEXITSTATUS(wstatus));
}

// The worker could not be started: says why and records it as the worker's exit with 127.
int fail(const fs::path& run_dir, std::string_view why) {
  std::fprintf(stderr, "trainyard: %.*s\n", static_cast<int>(why.size()), why.data());
  return record_exit(run_dir, ExitKind::Exited, kCannotStart);
}

std::string errno_text(std::string_view what) {
  return fmt::format("{}: {}", what, std::strerror(errno));
}

// Makes this process the group's leader and says so in the pid file; its stdout and stderr
// become the log, so the wrapper's own complaints land beside the worker's output.
util::Status start_session(const WrapperArgs& a, int log_fd) {
  // Under srun the wrapper already leads a process group of its own (the task's), and setsid()
  // refuses a group leader: that group is as good, its id is our pid all the same.
  if (::setsid() < 0 && !(errno == EPERM && ::getpgrp() == ::getpid()))
    return util::internal_error(errno_text("setsid"));
  ::dup2(log_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  auto self = internal::read_proc_stat(::getpid());
  if (!self) return util::internal_error("cannot read /proc/self/stat");
  return internal::write_file_atomically(
      a.run_dir / kPidFile,
      internal::format_pid_file({.pid = ::getpid(), .start_ticks = self->start_ticks}), false);
}

// The names of `pass` that the wrapper's own environment has, set over `env`.
void pass_through(const std::vector<std::string>& pass, std::vector<std::string>& env) {
  for (const auto& name : pass) {
    const char* value = ::getenv(name.c_str());
    if (value == nullptr) continue;
    std::erase_if(env, [&](const std::string& e) {
      return e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=';
    });
    env.push_back(name + "=" + value);
  }
}

int run(const WrapperArgs& a) {
  int env_fd = a.env_fd;
  if (!a.env_file.empty()) {
    env_fd = ::open(a.env_file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (env_fd < 0) {
      std::fprintf(stderr, "trainyard: cannot read the worker's environment %s: %s\n",
                   a.env_file.c_str(), std::strerror(errno));
      return record_exit(a.run_dir, ExitKind::Exited, kCannotStart);
    }
  }
  std::vector<std::string> env_strings = read_worker_env(env_fd);
  if (env_fd >= 0) pass_through(a.pass_env, env_strings);
  std::vector<char*> env;
  if (env_fd >= 0) env = internal::c_string_array(env_strings);
  reset_inherited_state();
  fs::path log_path = a.run_dir / kLogFile;
  int log_fd =
      ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (log_fd < 0) return fail(a.run_dir, errno_text("cannot open " + log_path.string()));
  internal::set_run_file_access(log_fd, a.run_dir);
  // Ignored before the pid file exists: from then on the server may signal the group.
  for (int sig : kIgnoredSignals) ::signal(sig, SIG_IGN);
  if (util::Status s = start_session(a, log_fd); !s.is_ok()) return fail(a.run_dir, s.message());
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &child, nullptr);
  int child_signal = ::signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
  int output[2];
  if (child_signal < 0 || ::pipe2(output, O_CLOEXEC) != 0) {
    return fail(a.run_dir, errno_text("pipe"));
  }
  pid_t worker = ::fork();
  if (worker < 0) return fail(a.run_dir, errno_text("fork"));
  if (worker == 0) exec_worker(a, output[1], env);
  ::close(output[1]);
  // When each line arrived (`logs --since`); without it the log is still written.
  const fs::path times_path = a.run_dir / kLogTimesFile;
  const int times_fd =
      ::open(times_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (times_fd >= 0) internal::set_run_file_access(times_fd, a.run_dir);
  LogTimesWriter times(times_fd, ::lseek(log_fd, 0, SEEK_END));
  CappedLog log(log_fd, a.log_cap, times);
  GpuReporter gpus(a);
  int wstatus = copy_until_exit(worker, output[0], child_signal, log, gpus, a.sample_ms);
  return record_wait_status(a.run_dir, wstatus);
}

}  // namespace

int wrapper_main(int argc, char** argv) {
  auto args = parse_args(argc, argv);
  if (!args.is_ok()) {
    std::fprintf(stderr,
                 "trainyard %s: %s\nusage: trainyard %s --run-dir DIR --log-cap BYTES [--cwd DIR] "
                 "[--checkpoint-dir DIR] [--uid UID --gid GID [--groups G,...]] [--env-fd FD] "
                 "-- COMMAND [ARGS...]\n(started by the local executor; not meant to be run by "
                 "hand)\n",
                 kWrapperSubcommand, args.status().message().c_str(), kWrapperSubcommand);
    return kCannotStart;
  }
  return run(*args);
}

}  // namespace trainyard::exec
