// Workers of a root server run as their team's user: what that user can and cannot do, and the
// ownership of every file in the run dir. Also: a spec's environment never reaches the root
// wrapper, and the server reads a job's files only with the job's own permissions. Tests that
// switch users need root and skip otherwise.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "exec/checkpoint_reader.h"
#include "exec/credentials.h"
#include "exec/executor.h"
#include "exec_test_util.h"

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;
using testing::eventually;
using testing::make_executor;
using testing::read_text;
using testing::sh_worker;
using testing::TempDir;
using testing::wait_for_exit;

constexpr uint32_t kTeamUid = 1900007;

Credentials team_user() {
  return Credentials{.uid = kTeamUid, .gid = kTeamUid, .groups = {}, .user = "1900007", .home = ""};
}

#define SKIP_UNLESS_ROOT() \
  if (::geteuid() != 0)    \
  GTEST_SKIP() << "switching users needs root; this test runs as uid " << ::geteuid()

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

// A temp dir that others may pass through (mkdtemp makes it 0700), as the state dir is.
void open_for_passing(const TempDir& dir) {
  ASSERT_EQ(::chmod(dir.path().c_str(), 0711), 0);
}

TEST(WorkerIsolation, RunsAsTheTeamUserWithOnlyItsGroupAndNoWayBack) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  open_for_passing(dir);
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(
      dir,
      "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); grep NoNewPrivs /proc/self/status; "
      "echo USER=$USER LOGNAME=$LOGNAME HOME=$HOME; echo cwd=$(pwd); "
      "touch $TRAINYARD_RUN_DIR/forged 2>/dev/null && echo run-dir-writable || echo "
      "run-dir-closed; "
      "echo 1 > $TRAINYARD_RUN_DIR/pid 2>/dev/null && echo pid-forged || echo pid-safe; "
      "touch work-file && echo work-dir-writable; touch $TMPDIR/t && echo tmp-writable; "
      "echo '{\"step\": 1}' >> $TRAINYARD_METRICS_FILE && echo metrics-appended; "
      "ln -sf /etc/shadow $TRAINYARD_METRICS_FILE 2>/dev/null && echo metrics-swapped || "
      "echo metrics-kept; kill -0 $PPID 2>/dev/null && echo wrapper-signalable || "
      "echo wrapper-protected; cat /etc/shadow >/dev/null 2>&1 && echo shadow-read || "
      "echo shadow-closed");
  w.checkpoint_dir.clear();
  w.run_as = team_user();
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  const std::string log = read_text(w.run_dir / kLogFile);
  EXPECT_EQ(status.kind, ExitKind::Exited) << log;
  EXPECT_NE(log.find("uid=1900007 gid=1900007 groups=1900007\n"), std::string::npos) << log;
  EXPECT_NE(log.find("NoNewPrivs:\t1"), std::string::npos) << log;
  const std::string work = (w.run_dir / kWorkDir).string();
  EXPECT_NE(log.find("USER=1900007 LOGNAME=1900007 HOME=" + work + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("cwd=" + work + "\n"), std::string::npos) << log;
  for (const char* expected :
       {"run-dir-closed", "pid-safe", "work-dir-writable", "tmp-writable", "metrics-appended",
        "metrics-kept", "wrapper-protected", "shadow-closed"})
    EXPECT_NE(log.find(expected), std::string::npos) << expected << "\n" << log;
  EXPECT_FALSE(fs::exists(w.run_dir / "forged"));
  EXPECT_EQ(read_text(w.run_dir / kMetricsFile), "{\"step\": 1}\n");
}

TEST(WorkerIsolation, RunDirFilesBelongToRootAndAreReadableByTheTeamOnly) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  open_for_passing(dir);
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo hi");
  w.checkpoint_dir.clear();
  w.run_as = team_user();
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  wait_for_exit(*ex, *ref, w.run_dir);
  auto run = stat_of(w.run_dir);
  EXPECT_EQ(run.st_uid, 0u);
  EXPECT_EQ(run.st_gid, kTeamUid);
  EXPECT_EQ(run.st_mode & 07777, 0750u);
  for (const char* name : {kLogFile, kPidFile, kExitStatusFile}) {
    auto st = stat_of(w.run_dir / name);
    EXPECT_EQ(st.st_uid, 0u) << name;
    EXPECT_EQ(st.st_gid, kTeamUid) << name;
    EXPECT_EQ(st.st_mode & 07777, 0640u) << name;
  }
  auto metrics = stat_of(w.run_dir / kMetricsFile);
  EXPECT_EQ(metrics.st_uid, kTeamUid);
  EXPECT_EQ(metrics.st_mode & 07777, 0640u);
  for (const char* name : {kWorkDir, kTmpDir}) {
    auto st = stat_of(w.run_dir / name);
    EXPECT_EQ(st.st_uid, kTeamUid) << name;
    EXPECT_EQ(st.st_mode & 07777, 0700u) << name;
  }
  // The notice too: the worker reads it through its group.
  WorkerLaunch sleeper = sh_worker(dir, "echo started; exec sleep 30");
  sleeper.run_dir = dir.path() / "run2";
  sleeper.checkpoint_dir.clear();
  sleeper.run_as = team_user();
  auto sref = ex->launch(sleeper);
  ASSERT_TRUE(sref.is_ok()) << sref.status().to_string();
  // Once it runs its command: before that it still ignores the notice, as its wrapper does.
  ASSERT_TRUE(testing::log_contains(sleeper.run_dir, "started"));
  ASSERT_TRUE(ex->notify(*sref, sleeper.run_dir, SIGTERM, "{\"reason\": \"test\"}").is_ok());
  auto notice = stat_of(sleeper.run_dir / kNoticeFile);
  EXPECT_EQ(notice.st_gid, kTeamUid);
  EXPECT_EQ(notice.st_mode & 07777, 0640u);
  wait_for_exit(*ex, *sref, sleeper.run_dir);
}

TEST(WorkerIsolation, ASpecsCheckpointDirIsMadeByTheWorkerNeverByRoot) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  open_for_passing(dir);
  auto ex = make_executor();
  // Under a root-owned dir the team may not write in: the worker cannot make it, and root did not.
  WorkerLaunch w = sh_worker(dir, "echo should-not-run");
  w.checkpoint_dir = (dir.path() / "root-only" / "ckpt").string();
  w.run_as = team_user();
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ProcessStatus status = wait_for_exit(*ex, *ref, w.run_dir);
  EXPECT_EQ(status.code, 127);
  const std::string log = read_text(w.run_dir / kLogFile);
  EXPECT_NE(log.find("cannot create the checkpoint directory '" + w.checkpoint_dir +
                     "': Permission denied"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("uid 1900007"), std::string::npos) << log;
  EXPECT_EQ(log.find("should-not-run"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(dir.path() / "root-only"));
  // Where the team may write, the worker makes it, and it is the team's.
  const fs::path team_dir = dir.path() / "team";
  fs::create_directories(team_dir);
  ASSERT_EQ(::chown(team_dir.c_str(), kTeamUid, kTeamUid), 0);
  WorkerLaunch ok = sh_worker(dir, "touch $TRAINYARD_CHECKPOINT_DIR/state");
  ok.run_dir = dir.path() / "run-ok";
  ok.checkpoint_dir = (team_dir / "a" / "b").string();
  ok.run_as = team_user();
  auto ok_ref = ex->launch(ok);
  ASSERT_TRUE(ok_ref.is_ok()) << ok_ref.status().to_string();
  EXPECT_EQ(wait_for_exit(*ex, *ok_ref, ok.run_dir).code, 0) << read_text(ok.run_dir / kLogFile);
  EXPECT_EQ(stat_of(team_dir / "a" / "b" / "state").st_uid, kTeamUid);
  EXPECT_EQ(stat_of(team_dir / "a").st_uid, kTeamUid);
}

TEST(WorkerIsolation, AWorkingDirTheTeamCannotEnterFailsWithAClearMessage) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  open_for_passing(dir);
  const fs::path closed = dir.path() / "closed";
  fs::create_directories(closed);
  ASSERT_EQ(::chmod(closed.c_str(), 0700), 0);
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo should-not-run");
  w.checkpoint_dir.clear();
  w.working_dir = closed.string();
  w.run_as = team_user();
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ(wait_for_exit(*ex, *ref, w.run_dir).code, 127);
  const std::string log = read_text(w.run_dir / kLogFile);
  EXPECT_NE(log.find("cannot change to working directory '" + closed.string() +
                     "': Permission denied (the worker runs as uid 1900007"),
            std::string::npos)
      << log;
}

TEST(WorkerIsolation, TheSpecsEnvironmentReachesTheWorkerButNotTheWrapper) {
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "echo SPEC_VAR=$SPEC_VAR; sleep 30");
  w.env = {{"SPEC_VAR", "from-spec"}, {"LD_PRELOAD", "/nonexistent/trainyard-test.so"}};
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(testing::log_contains(w.run_dir, "SPEC_VAR=from-spec"));
  // ref.pid is the wrapper's: its environment is the server's fixed one.
  const std::string wrapper_env = read_text("/proc/" + std::to_string(ref->pid) + "/environ");
  EXPECT_FALSE(wrapper_env.empty());
  EXPECT_EQ(wrapper_env.find("SPEC_VAR"), std::string::npos) << wrapper_env;
  EXPECT_EQ(wrapper_env.find("LD_PRELOAD"), std::string::npos) << wrapper_env;
  ASSERT_TRUE(ex->kill(*ref).is_ok());
  wait_for_exit(*ex, *ref, w.run_dir);
}

TEST(WorkerIsolation, CannotRunAsAnotherUserWithoutRoot) {
  if (::geteuid() == 0) GTEST_SKIP() << "as root the launch would succeed";
  TempDir dir;
  auto ex = make_executor();
  WorkerLaunch w = sh_worker(dir, "true");
  w.run_as = team_user();
  auto ref = ex->launch(w);
  ASSERT_FALSE(ref.is_ok());
  EXPECT_NE(ref.status().message().find("not root"), std::string::npos) << ref.status().message();
}

TEST(ScopedFileIdentity, ReadsWithTheJobsPermissionsAndRestoresRoot) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  open_for_passing(dir);
  const fs::path secret = dir.path() / "secret";
  std::ofstream(secret) << "root only\n";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  const Credentials team = team_user();
  {
    ScopedFileIdentity as_team(&team);
    ASSERT_TRUE(as_team.ok());
    EXPECT_EQ(read_text(secret), "");  // EACCES: root's file capabilities are gone too
  }
  EXPECT_EQ(read_text(secret), "root only\n");
  {
    ScopedFileIdentity as_server(nullptr);
    EXPECT_EQ(read_text(secret), "root only\n");
  }
}

TEST(ScopedFileIdentity, ACheckpointLinkedToARootFileShowsNothingOfIt) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  open_for_passing(dir);
  // A root-only JSON file the job wants the server to read for it.
  const fs::path secret = dir.path() / "secret.json";
  std::ofstream(secret) << R"({"format":"trainyard-checkpoint","step":1,"created":"TOPSECRET",)"
                        << R"("files":[]})";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  const fs::path ckpt = dir.path() / "ckpt";
  fs::create_directories(ckpt / "step-1");
  fs::create_directories(ckpt / "step-2");
  fs::create_symlink(secret, ckpt / "step-1" / "MANIFEST.json");  // a link as the manifest
  fs::create_symlink(dir.path(), ckpt / "step-2" / "up");         // a link higher up
  std::ofstream(ckpt / "step-2" / "MANIFEST.json")
      << R"({"format":"trainyard-checkpoint","step":2,"files":[{"name":"up/secret.json",)"
      << R"("size":10}]})";
  ASSERT_EQ(::chown(ckpt.c_str(), kTeamUid, kTeamUid), 0);
  const Credentials team = team_user();
  ScopedFileIdentity as_team(&team);
  ASSERT_TRUE(as_team.ok());
  auto list = list_checkpoints(ckpt);
  ASSERT_EQ(list.size(), 2u);
  for (const auto& c : list) {
    EXPECT_FALSE(c.verified) << c.step;
    EXPECT_EQ(c.created.find("TOPSECRET"), std::string::npos);
  }
  EXPECT_NE(list[0].problem.find("up/secret.json is missing"), std::string::npos)
      << list[0].problem;
}

}  // namespace
}  // namespace trainyard::exec
