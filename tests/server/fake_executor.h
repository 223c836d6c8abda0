// An exec::Executor for tests of the control plane: no processes, just records. Tests decide
// when a worker ends and how, and see which signals were sent.
#pragma once

#include <map>
#include <mutex>
#include <vector>

#include "exec/executor.h"

namespace trainyard::server {

class FakeExecutor final : public exec::Executor {
 public:
  util::Result<exec::ProcessRef> launch(const exec::WorkerLaunch& w) override {
    std::lock_guard lock(mu_);
    if (fail_launches > 0) {
      --fail_launches;
      return util::unavailable("cannot execute the wrapper");
    }
    const int pid = next_pid_++;
    launches.push_back(w);
    status[pid] = {exec::ExitKind::Running, 0, "running"};
    return exec::ProcessRef{pid, pid * 10};
  }
  exec::ProcessStatus poll(const exec::ProcessRef& p, const std::filesystem::path&) override {
    std::lock_guard lock(mu_);
    auto it = status.find(p.pid);
    return it == status.end() ? exec::ProcessStatus{exec::ExitKind::Lost, 0, "unknown"}
                              : it->second;
  }
  util::Status notify(const exec::ProcessRef& p, const std::filesystem::path&, int signal,
                      std::string_view body) override {
    std::lock_guard lock(mu_);
    notices.push_back({p.pid, signal});
    notice_bodies.emplace_back(body);
    return util::Status::ok();
  }
  util::Status kill(const exec::ProcessRef& p) override {
    std::lock_guard lock(mu_);
    kills.push_back(p.pid);
    if (!kills_take_effect) return util::Status::ok();
    if (status[p.pid].kind == exec::ExitKind::Running)
      status[p.pid] = {exec::ExitKind::Signaled, 9, "killed"};
    return util::Status::ok();
  }
  util::Result<exec::ProcessRef> find(const std::filesystem::path&) override {
    return util::not_found("no pid file");
  }
  void exit(int pid, int code) {
    std::lock_guard lock(mu_);
    status[pid] = {exec::ExitKind::Exited, code, "exited with code " + std::to_string(code)};
  }

  std::vector<exec::WorkerLaunch> launches;
  std::vector<std::pair<int, int>> notices;  // pid, signal
  std::vector<std::string> notice_bodies;    // the notice file's JSON, per notice
  std::vector<int> kills;
  int fail_launches = 0;          // the next N launches fail
  bool kills_take_effect = true;  // false: a killed worker runs on until exit() (slow to die)
  std::map<int, exec::ProcessStatus> status;

 private:
  std::mutex mu_;
  int next_pid_ = 1000;
};

}  // namespace trainyard::server
