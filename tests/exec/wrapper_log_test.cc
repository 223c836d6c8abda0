// The wrapper's output.log: what the worker prints, capped, and the wrapper's own complaints.
#include <gtest/gtest.h>

#include "exec/executor.h"
#include "exec_test_util.h"

namespace trainyard::exec {
namespace {

using testing::make_executor;
using testing::read_text;
using testing::sh_worker;
using testing::TempDir;
using testing::wait_for_exit;

TEST(ExecWrapper, CapsTheLogWithOneLineAndKeepsTheWorkerRunning) {
  TempDir dir;
  auto ex = make_executor();
  // Far more than a pipe holds: the worker would block (never exit) if the wrapper stopped
  // reading at the cap.
  WorkerLaunch w = sh_worker(dir, "head -c 300000 /dev/zero | tr '\\0' a; echo; echo done >&2");
  w.log_cap_bytes = 1000;
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited);
  EXPECT_EQ(status.code, 0);
  std::string log = read_text(w.run_dir / kLogFile);
  EXPECT_EQ(log, std::string(1000, 'a') + "\n[trainyard] log truncated at 1000 bytes\n");
}

TEST(ExecWrapper, OutputExactlyAtTheCapIsNotTruncated) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "printf '0123456789'");
  w.log_cap_bytes = 10;
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(read_text(w.run_dir / kLogFile), "0123456789");
}

TEST(ExecWrapper, FinishesWhenTheWorkerExitsEvenIfABackgroundChildHoldsTheOutput) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "sleep 300 & echo $! > bg.pid; echo bye; exit 4");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited);
  EXPECT_EQ(status.code, 4);
  EXPECT_EQ(read_text(w.run_dir / kLogFile), "bye\n");
  EXPECT_TRUE(ex->kill(*ref).is_ok()) << "the group outlives its leader; kill still reaches it";
  int background = std::stoi(read_text(w.run_dir / kWorkDir / "bg.pid"));
  EXPECT_TRUE(testing::eventually([&] { return testing::process_ended(background); }));
}

TEST(ExecWrapper, AppendsToAnExistingLogAndReplacesStaleRunFiles) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo second");
  std::filesystem::create_directories(w.run_dir);
  std::ofstream(w.run_dir / kLogFile) << "first\n";
  std::ofstream(w.run_dir / kExitStatusFile) << "exited 9\n";
  std::ofstream(w.run_dir / kNoticeFile) << "old notice\n";
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ(wait_for_exit(*ex, *ref, w.run_dir).code, 0);
  EXPECT_EQ(read_text(w.run_dir / kLogFile), "first\nsecond\n");
  EXPECT_FALSE(std::filesystem::exists(w.run_dir / kNoticeFile));
}

TEST(ExecWrapper, AMissingWorkingDirExitsWith127AndSaysWhy) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "true");
  w.working_dir = (dir.path() / "missing").string();
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ(wait_for_exit(*ex, *ref, w.run_dir).code, 127);
  EXPECT_NE(read_text(w.run_dir / kLogFile).find("cannot change to working directory"),
            std::string::npos);
}

}  // namespace
}  // namespace trainyard::exec
