// Runs workers as processes of this machine, each under the trainyard wrapper (wrapper.h).
// Everything a child needs is built before fork(): the server is multi-threaded, so the child
// makes only async-signal-safe calls until it execs the wrapper. Thread-safe: one mutex guards
// the set of wrappers this executor forked and has not reaped yet.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "exec/executor.h"
#include "exec/internal/run_files.h"
#include "exec/internal/worker_command.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/thread_annotations.h"

extern char** environ;

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;
constexpr util::Duration kPidFileWait = util::seconds(2);

std::string errno_text() {
  return std::strerror(errno);
}

// True when `p` is alive and is the process it names (not a later one that reused its pid).
bool is_live(const ProcessRef& p) {
  auto stat = internal::read_proc_stat(p.pid);
  if (!stat || stat->state == 'Z' || stat->state == 'X') return false;
  return p.start_ticks == 0 || stat->start_ticks == p.start_ticks;
}

// True when p.pid now belongs to another process than the one `p` recorded.
bool pid_reused(const ProcessRef& p) {
  auto stat = internal::read_proc_stat(p.pid);
  return stat && p.start_ticks != 0 && stat->start_ticks != p.start_ticks;
}

// The worker's environment in a memory file the wrapper reads (as fd kEnvFd): not on the
// wrapper's own command line or environment, which a spec must never control.
util::Result<int> env_file(const std::vector<std::string>& env) {
  int fd = ::memfd_create("trainyard-worker-env", MFD_CLOEXEC);
  if (fd < 0) return util::internal_error("memfd_create: " + errno_text());
  const std::string block = internal::env_block(env);
  size_t done = 0;
  while (done < block.size()) {
    ssize_t n = ::write(fd, block.data() + done, block.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = errno_text();
      ::close(fd);
      return util::internal_error("cannot write the worker's environment: " + why);
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

class LocalExecutor final : public Executor {
 public:
  explicit LocalExecutor(LocalExecutorOptions options) : options_(std::move(options)) {}

  util::Result<ProcessRef> launch(const WorkerLaunch& launch_request) override {
    TY_RETURN_IF_ERROR(internal::validate_launch(launch_request));
    if (options_.wrapper_path.empty()) {
      return util::failed_precondition(
          "local executor: wrapper_path (the trainyard binary) is empty");
    }
    TY_ASSIGN_OR_RETURN(WorkerLaunch w, internal::prepare_worker(launch_request));
    std::vector<std::string> argv = internal::wrapper_argv(options_.wrapper_path, w);
    std::vector<std::string> env = internal::wrapper_environment(environ);
    TY_ASSIGN_OR_RETURN(int env_fd, env_file(internal::worker_environment(w, environ)));
    auto pid = spawn_wrapper(argv, env, env_fd);
    ::close(env_fd);
    if (!pid.is_ok()) return pid.status();
    return await_pid_file(*pid, w.run_dir);
  }

  ProcessStatus poll(const ProcessRef& p, const fs::path& run_dir) override {
    if (auto status = reap_if_child(p, run_dir)) return *status;
    if (is_live(p)) return ProcessStatus{.kind = ExitKind::Running, .code = 0, .detail = "running"};
    return outcome(run_dir, "");
  }

  util::Status notify(const ProcessRef& p, const fs::path& run_dir, int signal,
                      std::string_view reason) override {
    if (!is_live(p)) {
      return util::not_found(fmt::format("worker {} is no longer running", p.pid));
    }
    std::string text(reason);
    if (text.empty() || text.back() != '\n') text += '\n';
    TY_RETURN_IF_ERROR(internal::write_file_atomically(run_dir / kNoticeFile, text, false));
    return signal_group(p, signal, /*gone_ok=*/false);
  }

  util::Status kill(const ProcessRef& p) override {
    return signal_group(p, SIGKILL, /*gone_ok=*/true);
  }

  util::Result<ProcessRef> find(const fs::path& run_dir) override {
    return internal::read_pid_file(run_dir);
  }

 private:
  // fork + execve of the wrapper, with `env_fd` as its fd kEnvFd. A close-on-exec pipe carries
  // errno back if execve fails.
  util::Result<int> spawn_wrapper(std::vector<std::string>& argv, std::vector<std::string>& env,
                                  int env_fd) {
    std::vector<char*> argv_c = internal::c_string_array(argv);
    std::vector<char*> env_c = internal::c_string_array(env);
    sigset_t no_signals;
    sigemptyset(&no_signals);
    int exec_error[2];
    if (::pipe2(exec_error, O_CLOEXEC) != 0) return util::internal_error("pipe2: " + errno_text());
    pid_t pid = ::fork();
    if (pid < 0) {
      std::string why = errno_text();
      ::close(exec_error[0]);
      ::close(exec_error[1]);
      return util::unavailable("cannot start a worker: fork failed: " + why);
    }
    if (pid == 0) {  // async-signal-safe calls only from here on
      ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);
      int error_fd = exec_error[1];
      if (error_fd == internal::kEnvFd) error_fd = ::fcntl(error_fd, F_DUPFD_CLOEXEC, 4);
      if (env_fd == internal::kEnvFd) {
        ::fcntl(env_fd, F_SETFD, 0);  // dup2 onto itself would keep close-on-exec
      } else if (::dup2(env_fd, internal::kEnvFd) < 0) {
        ::_exit(127);
      }
      ::execve(argv_c[0], argv_c.data(), env_c.data());
      int err = errno;
      ssize_t ignored = ::write(error_fd, &err, sizeof err);
      (void)ignored;
      ::_exit(127);
    }
    ::close(exec_error[1]);
    int child_errno = 0;
    ssize_t n;
    do {
      n = ::read(exec_error[0], &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    ::close(exec_error[0]);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      return util::failed_precondition(
          fmt::format("cannot run the worker wrapper '{}': {} (wrapper_path must be the trainyard "
                      "binary)",
                      options_.wrapper_path, std::strerror(child_errno)));
    }
    util::MutexLock lock(mu_);
    children_.insert(pid);
    return static_cast<int>(pid);
  }

  // The wrapper writes its pid file right after setsid(), so once it is there the worker's
  // process group exists and signals reach it.
  util::Result<ProcessRef> await_pid_file(int pid, const fs::path& run_dir) {
    util::Duration deadline = util::WallClock::steady_now() + kPidFileWait;
    while (true) {
      auto ref = internal::read_pid_file(run_dir);
      if (ref.is_ok() && ref->pid == pid) return *ref;
      auto stat = internal::read_proc_stat(pid);
      if (!stat || stat->state == 'Z') {
        ref = internal::read_pid_file(run_dir);  // it may have written it just before exiting
        if (ref.is_ok() && ref->pid == pid) return *ref;
        reap(pid);
        return util::internal_error(
            fmt::format("the worker wrapper (pid {}) exited before starting the worker; see {} "
                        "and the server's log",
                        pid, (run_dir / kLogFile).string()));
      }
      if (util::WallClock::steady_now() > deadline) {
        // Slow to start, but running: /proc has the same start time the pid file would.
        TY_LOG_WARN("worker wrapper {} wrote no pid file within {} s; using /proc", pid,
                    util::to_seconds(kPidFileWait));
        return ProcessRef{.pid = pid, .start_ticks = stat->start_ticks};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  void reap(int pid) TY_EXCLUDES(mu_) {
    util::MutexLock lock(mu_);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    children_.erase(pid);
  }

  // nullopt when `p` is not a wrapper this executor forked and has yet to reap.
  std::optional<ProcessStatus> reap_if_child(const ProcessRef& p, const fs::path& run_dir)
      TY_EXCLUDES(mu_) {
    int wstatus = 0;
    pid_t r;
    {
      util::MutexLock lock(mu_);
      if (!children_.contains(p.pid) || pid_reused(p)) return std::nullopt;
      do {
        r = ::waitpid(p.pid, &wstatus, WNOHANG);
      } while (r < 0 && errno == EINTR);
      if (r == 0) return ProcessStatus{.kind = ExitKind::Running, .code = 0, .detail = "running"};
      children_.erase(p.pid);
    }
    if (r < 0) return std::nullopt;  // reaped elsewhere: the run dir still tells
    std::string wrapper = WIFSIGNALED(wstatus)
                              ? internal::describe_exit(ExitKind::Signaled, WTERMSIG(wstatus))
                              : internal::describe_exit(ExitKind::Exited, WEXITSTATUS(wstatus));
    return outcome(run_dir, wrapper);
  }

  // The worker's recorded outcome; Lost when the wrapper died without recording one.
  static ProcessStatus outcome(const fs::path& run_dir, const std::string& wrapper_end) {
    if (auto status = internal::read_exit_status(run_dir)) return *status;
    ProcessStatus lost{
        .kind = ExitKind::Lost, .code = 0, .detail = internal::describe_exit(ExitKind::Lost, 0)};
    if (!wrapper_end.empty()) lost.detail += fmt::format(" (its wrapper {})", wrapper_end);
    return lost;
  }

  // Signals the worker's whole process group (the wrapper's pid is its id), unless the pid now
  // belongs to another process.
  static util::Status signal_group(const ProcessRef& p, int signal, bool gone_ok) {
    util::Status gone = gone_ok
                            ? util::Status::ok()
                            : util::not_found(fmt::format("worker {} is no longer running", p.pid));
    if (p.pid <= 0) return util::invalid_argument(fmt::format("bad worker pid {}", p.pid));
    if (pid_reused(p)) return gone;
    if (::kill(-p.pid, signal) == 0) return util::Status::ok();
    // Before setsid() the wrapper is not yet a group leader: signal it alone.
    if (errno == ESRCH && ::kill(p.pid, signal) == 0) return util::Status::ok();
    if (errno == ESRCH) return gone;
    return util::internal_error(
        fmt::format("cannot signal worker group {}: {}", p.pid, errno_text()));
  }

  const LocalExecutorOptions options_;
  util::Mutex mu_;
  std::unordered_set<int> children_ TY_GUARDED_BY(mu_);  // wrappers forked here, not yet reaped
};

}  // namespace

ExecutorPtr make_local_executor(const LocalExecutorOptions& options) {
  return std::make_unique<LocalExecutor>(options);
}

}  // namespace trainyard::exec
