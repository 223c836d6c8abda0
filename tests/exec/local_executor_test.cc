// Launching workers and reading their outcomes through the real wrapper.
#include <gtest/gtest.h>

#include "exec/executor.h"
#include "exec_test_util.h"

namespace trainyard::exec {
namespace {

using testing::eventually;
using testing::make_executor;
using testing::read_text;
using testing::sh_worker;
using testing::TempDir;
using testing::wait_for_exit;

constexpr const char* kPrintEnv =
    "for v in CUDA_VISIBLE_DEVICES WORLD_SIZE RANK LOCAL_RANK MASTER_ADDR MASTER_PORT "
    "TRAINYARD_JOB_ID TRAINYARD_ATTEMPT TRAINYARD_RANK TRAINYARD_CHECKPOINT_DIR "
    "TRAINYARD_PREEMPT_NOTICE TRAINYARD_METRICS_FILE TRAINYARD_MTBF_SECONDS USER_VAR TMPDIR; "
    "do eval \"echo $v=[\\${$v-unset}]\"; done; pwd";

TEST(LocalExecutor, GivesTheWorkerItsGpusRankAndTrainyardVariables) {
  TempDir dir;
  setenv("CUDA_VISIBLE_DEVICES", "server-gpus", 1);
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, kPrintEnv);
  w.visible_devices = {"GPU-sim-0-H100-80GB", "GPU-sim-1-H100-80GB"};
  w.world_size = 4;
  w.rank = 3;
  w.local_rank = 1;
  w.master_addr = "10.0.0.7";
  w.master_port = 29500;
  w.env = {{"USER_VAR", "hello world"}, {"RANK", "99"}};
  w.mtbf_seconds = 7200.4;
  auto ref = ex->launch(w);
  unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited);
  std::string log = read_text(w.run_dir / kLogFile);
  EXPECT_NE(log.find("CUDA_VISIBLE_DEVICES=[GPU-sim-0-H100-80GB,GPU-sim-1-H100-80GB]\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("WORLD_SIZE=[4]\nRANK=[3]\nLOCAL_RANK=[1]\nMASTER_ADDR=[10.0.0.7]\n"
                     "MASTER_PORT=[29500]\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("TRAINYARD_JOB_ID=[42]\nTRAINYARD_ATTEMPT=[2]\nTRAINYARD_RANK=[3]\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("TRAINYARD_CHECKPOINT_DIR=[" + (dir.path() / "ckpt").string() + "]"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "ckpt"));
  EXPECT_NE(log.find("TRAINYARD_PREEMPT_NOTICE=[" + (w.run_dir / kNoticeFile).string() + "]"),
            std::string::npos);
  EXPECT_NE(log.find("TRAINYARD_METRICS_FILE=[" + (w.run_dir / "metrics.jsonl").string() + "]"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("TRAINYARD_MTBF_SECONDS=[7200]"), std::string::npos) << log;
  EXPECT_NE(log.find("USER_VAR=[hello world]"), std::string::npos);
  EXPECT_NE(log.find("\n" + (w.run_dir / kWorkDir).string() + "\n"), std::string::npos)
      << "cwd is run_dir/work";
  EXPECT_NE(log.find("TMPDIR=[" + (w.run_dir / kTmpDir).string() + "]"), std::string::npos) << log;
}

TEST(LocalExecutor, HidesAllGpusFromAWorkerWithoutGpus) {
  TempDir dir;
  setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, kPrintEnv);
  w.working_dir = dir.path().string();
  auto ref = ex->launch(w);
  unsetenv("CUDA_VISIBLE_DEVICES");
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  wait_for_exit(*ex, *ref, w.run_dir);
  std::string log = read_text(w.run_dir / kLogFile);
  EXPECT_NE(log.find("CUDA_VISIBLE_DEVICES=[]\n"), std::string::npos) << log;
  EXPECT_NE(log.find("MASTER_PORT=[unset]"), std::string::npos) << log;
  EXPECT_NE(log.find("\n" + dir.path().string() + "\n"), std::string::npos) << "cwd";
}

TEST(LocalExecutor, ReportsTheWorkersExitCode) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo to-stdout; echo to-stderr >&2; exit 3");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_GT(ref->start_ticks, 0);
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited);
  EXPECT_EQ(status.code, 3);
  EXPECT_EQ(status.detail, "exited with code 3");
  EXPECT_EQ(read_text(w.run_dir / kExitStatusFile), "exited 3\n");
  EXPECT_EQ(read_text(w.run_dir / kLogFile), "to-stdout\nto-stderr\n");
  // Later polls (now through the run dir) say the same.
  EXPECT_EQ(ex->poll(*ref, w.run_dir).code, 3);
}

TEST(LocalExecutor, ReportsAWorkerKilledByASignal) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "kill -KILL $$");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Signaled);
  EXPECT_EQ(status.code, SIGKILL);
  EXPECT_EQ(status.detail, "killed by SIGKILL");
}

TEST(LocalExecutor, AMissingProgramExitsWith127AndSaysWhy) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "");
  w.argv = {"trainyard-no-such-program", "--flag"};
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.kind, ExitKind::Exited);
  EXPECT_EQ(status.code, 127);
  EXPECT_EQ(read_text(w.run_dir / kLogFile),
            "trainyard: cannot execute 'trainyard-no-such-program': No such file or directory\n");
}

TEST(LocalExecutor, RefusesBadLaunchesAndAMissingWrapper) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch empty = sh_worker(dir, "");
  empty.argv.clear();
  EXPECT_EQ(ex->launch(empty).status().code(), util::StatusCode::InvalidArgument);
  WorkerLaunch bad_env = sh_worker(dir, "true");
  bad_env.env = {{"A=B", "c"}};
  EXPECT_EQ(ex->launch(bad_env).status().code(), util::StatusCode::InvalidArgument);
  auto no_wrapper = make_local_executor({.wrapper_path = "/nonexistent/trainyard"});
  auto result = no_wrapper->launch(sh_worker(dir, "true"));
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("/nonexistent/trainyard"), std::string::npos);
}

TEST(LocalExecutor, FindReadsThePidFile) {
  TempDir dir;
  auto ex = make_executor();
  EXPECT_EQ(ex->find(dir.path()).status().code(), util::StatusCode::NotFound);
  WorkerLaunch w = sh_worker(dir, "exit 0");
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  auto found = ex->find(w.run_dir);
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  EXPECT_EQ(*found, *ref);
  wait_for_exit(*ex, *ref, w.run_dir);
}

TEST(LocalExecutor, DoesNotMistakeAReusedPidForTheWorker) {
  TempDir dir;
  auto ex = make_executor();
  // This test process, with another start time, stands in for a process that reused the pid.
  ProcessRef stale{.pid = ::getpid(), .start_ticks = 1};
  ProcessStatus status = ex->poll(stale, dir.path());
  EXPECT_EQ(status.kind, ExitKind::Lost);
  EXPECT_EQ(ex->notify(stale, dir.path(), SIGTERM, "x").code(), util::StatusCode::NotFound);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / kNoticeFile));
}

}  // namespace
}  // namespace trainyard::exec
