#include "exec/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "exec/internal/worker_command.h"

extern char** environ;

namespace trainyard::exec {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

util::Result<CommandResult> run_command(const std::vector<std::string>& argv,
                                        const CommandOptions& options) {
  if (argv.empty() || argv[0].empty()) return util::invalid_argument("run_command: empty argv");
  std::vector<std::string> args = argv;
  std::vector<std::string> env = options.env;
  std::vector<char*> argv_c = internal::c_string_array(args);
  std::vector<char*> env_c = internal::c_string_array(env);
  char** envp = options.env.empty() ? environ : env_c.data();
  // The PATH the child searches, resolved here (execvpe is not async-signal-safe to set up).
  std::string program = argv[0];
  if (program.find('/') == std::string::npos) {
    std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (char** e = envp; e && *e; ++e)
      if (std::strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
    std::string found;
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string candidate = path.substr(start, end - start) + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) {
        found = candidate;
        break;
      }
      start = end + 1;
    }
    if (found.empty())
      return util::failed_precondition(
          fmt::format("'{}' is not installed or not in PATH ({})", program, path));
    program = found;
  }
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return util::internal_error("pipe2 failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return util::internal_error("pipe2 failed");
  }
  sigset_t no_signals;
  sigemptyset(&no_signals);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return util::unavailable(fmt::format("cannot run {}: fork failed", program));
  }
  if (pid == 0) {  // async-signal-safe calls only
    ::sigprocmask(SIG_SETMASK, &no_signals, nullptr);
    ::setpgid(0, 0);  // so a time-out kills what it started too
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(program.c_str(), argv_c.data(), envp);
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  CommandResult result;
  const util::Duration deadline = util::WallClock::steady_now() + options.timeout;
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    const util::Duration left = deadline - util::WallClock::steady_now();
    if (left <= util::Duration(0)) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd fds[2];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count();
    const int ready =
        ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(std::min<int64_t>(ms + 1, 1000)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (fds[i].fd == out_fd ? result.out : result.err).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        if (fds[i].fd == out_fd)
          close_fd(out_fd);
        else
          close_fd(err_fd);
      }
    }
  }
  close_fd(out_fd);
  close_fd(err_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  if (result.exit_code == 127 && result.out.empty() && result.err.empty())
    return util::failed_precondition(fmt::format("cannot run {}", program));
  return result;
}

}  // namespace trainyard::exec
