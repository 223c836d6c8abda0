// Helpers for executor tests: a temporary dir per test, `sh -c` workers under the real wrapper,
// and waiting with a deadline (polling, never a fixed sleep longer than a few milliseconds).
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "exec/executor.h"
#include "util/clock.h"

namespace trainyard::exec::testing {

inline constexpr util::Duration kDeadline = util::seconds(20);

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ty-exec-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline ExecutorPtr make_executor() {
  return make_local_executor({.wrapper_path = TY_EXEC_WRAPPER_BIN});
}

inline WorkerLaunch sh_worker(const TempDir& dir, std::string script) {
  WorkerLaunch w;
  w.job = util::JobId(42);
  w.attempt = 2;
  w.argv = {"sh", "-c", std::move(script)};
  w.run_dir = dir.path() / "run";
  w.checkpoint_dir = (dir.path() / "ckpt").string();
  return w;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Polls `done` every few milliseconds until it holds or the deadline passes.
inline bool eventually(const std::function<bool()>& done) {
  util::Duration deadline = util::WallClock::steady_now() + kDeadline;
  while (!done()) {
    if (util::WallClock::steady_now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

inline ProcessStatus wait_for_exit(Executor& ex, const ProcessRef& ref,
                                   const std::filesystem::path& run_dir) {
  ProcessStatus status;
  bool ended = eventually([&] {
    status = ex.poll(ref, run_dir);
    return status.kind != ExitKind::Running;
  });
  EXPECT_TRUE(ended) << "worker " << ref.pid << " still running";
  return status;
}

inline bool log_contains(const std::filesystem::path& run_dir, const std::string& text) {
  return eventually([&] { return read_text(run_dir / kLogFile).find(text) != std::string::npos; });
}

// Gone, or a zombie nobody has reaped yet: either way it no longer runs.
inline bool process_ended(int pid) {
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

}  // namespace trainyard::exec::testing
