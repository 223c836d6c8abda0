// Notice, kill, process groups and sessions, and re-adoption by an executor that did not launch
// the worker (as after a server restart).
#include <unistd.h>

#include <gtest/gtest.h>

#include "exec/executor.h"
#include "exec_test_util.h"

namespace trainyard::exec {
namespace {

using testing::eventually;
using testing::log_contains;
using testing::make_executor;
using testing::process_ended;
using testing::read_text;
using testing::sh_worker;
using testing::TempDir;
using testing::wait_for_exit;

TEST(LocalExecutor, NoticeReachesAWorkerThatExitsCleanly) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(
      dir,
      "trap 'echo notice: $(cat \"$TRAINYARD_PREEMPT_NOTICE\"); exit 0' TERM; echo ready; "
      "while :; do sleep 0.02; done");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(log_contains(w.run_dir, "ready\n"));
  ASSERT_TRUE(ex->notify(*ref, w.run_dir, SIGTERM, "spot capacity reclaimed").is_ok());
  EXPECT_EQ(read_text(w.run_dir / kNoticeFile), "spot capacity reclaimed\n");
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited) << status.detail;
  EXPECT_EQ(status.code, 0);
  EXPECT_NE(read_text(w.run_dir / kLogFile).find("notice: spot capacity reclaimed"),
            std::string::npos);
  EXPECT_EQ(ex->notify(*ref, w.run_dir, SIGTERM, "again").code(), util::StatusCode::NotFound);
}

TEST(LocalExecutor, KillEndsAWorkerThatIgnoresTheNotice) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "trap '' TERM; echo ready; while :; do sleep 0.02; done");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(log_contains(w.run_dir, "ready\n"));
  ASSERT_TRUE(ex->notify(*ref, w.run_dir, SIGTERM, "please stop").is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ex->poll(*ref, w.run_dir).kind, ExitKind::Running);
  ASSERT_TRUE(ex->kill(*ref).is_ok());
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  // The wrapper died with its worker, so nothing recorded the outcome.
  EXPECT_EQ(status.kind, ExitKind::Lost);
  EXPECT_NE(status.detail.find("killed by SIGKILL"), std::string::npos) << status.detail;
  EXPECT_TRUE(ex->kill(*ref).is_ok()) << "killing a finished worker is fine";
}

TEST(LocalExecutor, KillTakesTheWholeProcessGroup) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "sleep 300 & echo $! > grandchild.pid; echo ready; wait");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(log_contains(w.run_dir, "ready\n"));
  int grandchild = std::stoi(read_text(w.run_dir / kWorkDir / "grandchild.pid"));
  EXPECT_FALSE(process_ended(grandchild));
  ASSERT_TRUE(ex->kill(*ref).is_ok());
  EXPECT_TRUE(eventually([&] { return process_ended(grandchild); }));
  wait_for_exit(*ex, *ref, w.run_dir);
}

TEST(LocalExecutor, WorkerRunsInItsOwnSessionLedByTheWrapper) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo $$ > worker.pid; echo ready; exec sleep 300");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(log_contains(w.run_dir, "ready\n"));
  int worker = std::stoi(read_text(w.run_dir / kWorkDir / "worker.pid"));
  EXPECT_NE(worker, ref->pid);
  EXPECT_EQ(::getsid(worker), ref->pid);
  EXPECT_EQ(::getpgid(worker), ref->pid);
  EXPECT_EQ(::getsid(ref->pid), ref->pid);
  EXPECT_NE(::getsid(0), ref->pid);
  ASSERT_TRUE(ex->kill(*ref).is_ok());
  wait_for_exit(*ex, *ref, w.run_dir);
}

TEST(LocalExecutor, ASecondExecutorReadoptsARunningWorker) {
  TempDir dir;
  auto launcher = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo ready; while [ ! -e go ]; do sleep 0.01; done; exit 5");
  auto ref = launcher->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(log_contains(w.run_dir, "ready\n"));
  // The launcher stays silent (it must not reap the wrapper) while a fresh executor takes over.
  auto adopter = make_executor();
  auto found = adopter->find(w.run_dir);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(*found, *ref);
  EXPECT_EQ(adopter->poll(*found, w.run_dir).kind, ExitKind::Running);
  std::ofstream(w.run_dir / kWorkDir / "go").put('\n');
  ProcessStatus status = wait_for_exit(*adopter, *found, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited);
  EXPECT_EQ(status.code, 5);
  // The launcher, still its parent, reaps it and agrees.
  EXPECT_EQ(launcher->poll(*ref, w.run_dir).code, 5);
}

}  // namespace
}  // namespace trainyard::exec
