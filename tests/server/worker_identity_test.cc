// Which user runs each team's workers: the `workers:` config, the durable team -> uid map, the
// modes of the state directory, the loopback peer's uid, and what the control plane hands the
// executor. Tests that change owners need root and skip otherwise.
#include "server/worker_identity.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "fake_executor.h"
#include "server/config.h"
#include "server/control_plane.h"
#include "server/peer_uid.h"
#include "server/state_dir.h"

namespace trainyard::server {
namespace {

namespace fs = std::filesystem;

#define SKIP_UNLESS_ROOT() \
  if (::geteuid() != 0)    \
  GTEST_SKIP() << "changing owners needs root; this test runs as uid " << ::geteuid()

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ty-ident-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

uid_t owner_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_uid;
}

TEST(WorkersConfig, ParsesAutoUsersRangesAndRunAs) {
  auto c = parse_server_config(
      "workers:\n  user: auto\n  uidRange: 2000000-2000009\n  runAs: {vision: root, nlp: 4242}\n",
      "c.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_FALSE(c->workers.user.has_value());
  EXPECT_EQ(c->workers.uid_first, 2000000u);
  EXPECT_EQ(c->workers.uid_last, 2000009u);
  EXPECT_EQ(c->workers.run_as.at("vision").uid, 0u);
  EXPECT_EQ(c->workers.run_as.at("vision").user, "root");
  EXPECT_EQ(c->workers.run_as.at("vision").home, "/root");
  EXPECT_EQ(c->workers.run_as.at("nlp").uid, 4242u);
  EXPECT_EQ(c->workers.run_as.at("nlp").gid, 4242u);  // no passwd entry: gid of the same number
  auto fixed = parse_server_config("workers: {user: nobody}\n", "c.yaml");
  ASSERT_TRUE(fixed.is_ok()) << fixed.status().to_string();
  EXPECT_EQ(fixed->workers.user->uid, 65534u);
  auto defaults = parse_server_config("policy: fifo\n", "c.yaml");
  ASSERT_TRUE(defaults.is_ok());
  EXPECT_FALSE(defaults->workers.user.has_value());
  EXPECT_EQ(defaults->workers.uid_first, 1900000u);
}

TEST(WorkersConfig, AnUnknownUserIsAnErrorWithFileAndLine) {
  auto c = parse_server_config("policy: fifo\nworkers:\n  user: no-such-user-here\n", "c.yaml");
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message().rfind("c.yaml:3:", 0), 0u) << c.status().message();
  EXPECT_NE(c.status().message().find("no user 'no-such-user-here'"), std::string::npos);
  c = parse_server_config("workers:\n  runAs: {vision: ghost-user-x}\n", "c.yaml");
  EXPECT_EQ(c.status().message().rfind("c.yaml:2:", 0), 0u) << c.status().message();
  for (const char* bad : {"0-10", "10-5", "abc", "5"}) {
    c = parse_server_config(std::string("workers: {uidRange: ") + bad + "}\n", "c.yaml");
    EXPECT_NE(c.status().message().find("uidRange must be FIRST-LAST"), std::string::npos) << bad;
  }
  c = parse_server_config("workers: {users: auto}\n", "c.yaml");
  EXPECT_NE(c.status().message().find(
                "c.yaml:1:11: unknown field \"workers.users\" (did you mean \"user\"?"),
            std::string::npos)
      << c.status().message();
}

TEST(WorkerIdentities, EachTeamKeepsItsOwnUidAcrossRestarts) {
  TempDir dir;
  WorkersConfig config;
  config.uid_first = 2100000;
  config.uid_last = 2100009;
  const fs::path map = dir.path() / kWorkerUidsFile;
  {
    auto ids = WorkerIdentities::open(config, map, /*isolate=*/true);
    ASSERT_TRUE(ids.is_ok()) << ids.status().to_string();
    auto a = (*ids)->for_launch("a");
    auto b = (*ids)->for_launch("b");
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    EXPECT_EQ((*a)->uid, 2100000u);
    EXPECT_EQ((*a)->gid, 2100000u);
    EXPECT_TRUE((*a)->groups.empty());
    EXPECT_EQ((*b)->uid, 2100001u);
    EXPECT_EQ((*(*ids)->for_launch("a"))->uid, 2100000u);
    EXPECT_EQ((*ids)->for_reading("never-ran")->uid, kNobody);
  }
  EXPECT_EQ(mode_of(map), 0600u);
  // A new range does not move the teams that have uids: their checkpoints are theirs.
  config.uid_first = 2200000;
  config.uid_last = 2200009;
  auto again = WorkerIdentities::open(config, map, true);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*(*again)->for_launch("b"))->uid, 2100001u);
  EXPECT_EQ((*(*again)->for_launch("c"))->uid, 2200000u);
  EXPECT_EQ((*again)->for_reading("a")->uid, 2100000u);
  EXPECT_TRUE((*again)->is_worker_uid(2100001));
  EXPECT_TRUE((*again)->is_worker_uid(2200005));  // in the range, not yet given out
  EXPECT_FALSE((*again)->is_worker_uid(0));
}

TEST(WorkerIdentities, SkipsUidsThatAccountsHaveAndRefusesAFullRange) {
  TempDir dir;
  WorkersConfig config;
  config.uid_first = 1;  // daemon, bin, sys on every Debian
  config.uid_last = 3;
  auto ids = WorkerIdentities::open(config, dir.path() / kWorkerUidsFile, true);
  ASSERT_TRUE(ids.is_ok());
  auto r = (*ids)->for_launch("a");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("widen the range"), std::string::npos);
}

TEST(WorkerIdentities, ConfiguredUsersWinAndNothingIsIsolatedWithoutRoot) {
  TempDir dir;
  WorkersConfig config;
  config.user =
      exec::Credentials{.uid = 4000, .gid = 4000, .groups = {}, .user = "svc", .home = ""};
  config.run_as["ops"] =
      exec::Credentials{.uid = 4001, .gid = 4001, .groups = {44}, .user = "ops", .home = "/h"};
  auto ids = WorkerIdentities::open(config, dir.path() / kWorkerUidsFile, true);
  ASSERT_TRUE(ids.is_ok());
  EXPECT_EQ((*(*ids)->for_launch("a"))->uid, 4000u);
  EXPECT_EQ((*(*ids)->for_launch("ops"))->groups, std::vector<uint32_t>{44});
  EXPECT_FALSE(fs::exists(dir.path() / kWorkerUidsFile));  // nothing to remember
  EXPECT_FALSE((*ids)->is_worker_uid(1900000));            // the auto range is not in use
  auto off = WorkerIdentities::open(config, dir.path() / kWorkerUidsFile, false);
  ASSERT_TRUE(off.is_ok());
  EXPECT_FALSE((*(*off)->for_launch("a")).has_value());
  EXPECT_FALSE((*off)->for_reading("a").has_value());
}

TEST(WorkerIdentities, ABrokenMapStopsTheServerWithWhatToDo) {
  TempDir dir;
  std::ofstream(dir.path() / kWorkerUidsFile) << "{\"teams\": 3}";
  auto ids = WorkerIdentities::open({}, dir.path() / kWorkerUidsFile, true);
  ASSERT_FALSE(ids.is_ok());
  EXPECT_NE(ids.status().message().find("restore it from a backup"), std::string::npos);
}

TEST(StateDir, GivesTheStateDirItsModesAndTightensOldOnes) {
  TempDir dir;
  const fs::path state = dir.path() / "state";
  fs::create_directories(state / "jobs" / "7" / "attempt-1" / "rank-0");
  ASSERT_EQ(::chmod(state.c_str(), 0755), 0);
  ASSERT_EQ(::chmod((state / "jobs" / "7").c_str(), 0755), 0);
  std::ofstream(state / "jobs" / "7" / "attempt-1" / "rank-0" / "output.log") << "old log\n";
  ASSERT_EQ(::chmod((state / "jobs" / "7" / "attempt-1" / "rank-0" / "output.log").c_str(), 0644),
            0);
  std::ofstream(state / "state.db") << "";
  ASSERT_EQ(::chmod((state / "state.db").c_str(), 0644), 0);
  std::ofstream(state / "admin.token") << "ty_x\n";
  ASSERT_EQ(::chmod((state / "admin.token").c_str(), 0644), 0);
  ASSERT_TRUE(prepare_state_dir(state, /*isolate=*/true).is_ok());
  EXPECT_EQ(mode_of(state), 0711u);
  EXPECT_EQ(mode_of(state / "jobs"), 0711u);
  EXPECT_EQ(mode_of(state / "checkpoints"), 0711u);
  EXPECT_EQ(mode_of(state / "state.db"), 0600u);
  EXPECT_EQ(mode_of(state / "admin.token"), 0600u);
  EXPECT_EQ(mode_of(state / "jobs" / "7"), 0750u);
  EXPECT_EQ(mode_of(state / "jobs" / "7" / "attempt-1" / "rank-0" / "output.log"), 0640u);
  ASSERT_TRUE(prepare_state_dir(state, /*isolate=*/false).is_ok());
  EXPECT_EQ(mode_of(state), 0700u);
}

TEST(StateDir, AttemptAndCheckpointDirsBelongToTheTeam) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  ASSERT_TRUE(prepare_state_dir(dir.path(), true).is_ok());
  const exec::Credentials team{
      .uid = 2300001, .gid = 2300001, .groups = {}, .user = "", .home = ""};
  ASSERT_TRUE(prepare_attempt_dir(dir.path(), util::JobId(9), 2, &team).is_ok());
  for (const fs::path& p : {dir.path() / "jobs" / "9", dir.path() / "jobs" / "9" / "attempt-2"}) {
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u) << p;
    EXPECT_EQ(st.st_gid, team.gid) << p;
    EXPECT_EQ(st.st_mode & 07777, 0750u) << p;
  }
  // An older version's root-owned checkpoint dir is handed over, links and all, but a link is
  // never followed and a hard-linked file (maybe a file from elsewhere) is left alone.
  const fs::path ckpt = dir.path() / "checkpoints" / "9";
  fs::create_directories(ckpt / "step-1");
  std::ofstream(ckpt / "step-1" / "model") << "weights";
  const fs::path outside = dir.path() / "outside";
  std::ofstream(outside) << "root's";
  fs::create_symlink(outside, ckpt / "step-1" / "link");
  fs::create_hard_link(outside, ckpt / "step-1" / "hard");
  ASSERT_TRUE(prepare_checkpoint_dir(ckpt, &team).is_ok());
  EXPECT_EQ(owner_of(ckpt), team.uid);
  EXPECT_EQ(mode_of(ckpt), 0700u);
  EXPECT_EQ(owner_of(ckpt / "step-1"), team.uid);
  EXPECT_EQ(owner_of(ckpt / "step-1" / "model"), team.uid);
  EXPECT_EQ(owner_of(ckpt / "step-1" / "link"), team.uid);  // the link itself
  EXPECT_EQ(owner_of(outside), 0u);
  EXPECT_EQ(owner_of(ckpt / "step-1" / "hard"), 0u);
}

TEST(PeerUid, NamesTheUserBehindALoopbackConnection) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  const uint32_t want = ::geteuid() == 0 ? 2300002 : ::geteuid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(want) != 0 || ::setuid(want) != 0)) ::_exit(3);
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(4);
    char c;
    ssize_t ignored = ::read(s, &c, 1);  // held open until the parent has looked
    (void)ignored;
    ::_exit(0);
  }
  const int conn = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  EXPECT_EQ(loopback_peer_uid(conn), std::optional<uint32_t>(want));
  ::close(conn);
  ::close(listener);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(loopback_peer_uid(0).has_value());  // not a socket
}

std::string job_yaml(const std::string& team) {
  return "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  team: " + team +
         "\n  template:\n    command: [train]\n";
}

TEST(ControlPlaneWorkers, EachTeamsWorkersRunAsItsUserAndAnonymousWorkersAreRefused) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  FakeExecutor exec;
  util::VirtualClock clock{util::kEpoch + util::seconds(1'800'000'000)};
  ServerConfig config;
  config.workers.uid_first = 2400000;
  config.workers.uid_last = 2400099;
  const Principal admin{.admin = true, .team = "", .name = "admin"};
  {
    auto plane =
        ControlPlane::open({.state_dir = dir.path(), .config = config, .isolate_workers = true},
                           ControlPlane::nodes_from_devices({}), exec, clock);
    ASSERT_TRUE(plane.is_ok()) << plane.status().to_string();
    ASSERT_TRUE((*plane)->submit(job_yaml("a"), "a.yaml", admin).is_ok());
    ASSERT_TRUE((*plane)->submit(job_yaml("b"), "b.yaml", admin).is_ok());
    ASSERT_TRUE((*plane)->reconcile_once().is_ok());
    ASSERT_EQ(exec.launches.size(), 2u);
    EXPECT_EQ(exec.launches[0].run_as->uid, 2400000u);
    EXPECT_EQ(exec.launches[1].run_as->uid, 2400001u);
    const fs::path ckpt = exec.launches[0].checkpoint_dir;
    EXPECT_EQ(owner_of(ckpt), 2400000u);
    EXPECT_EQ(mode_of(ckpt), 0700u);
    EXPECT_EQ(mode_of(dir.path()), 0711u);
    EXPECT_FALSE((*plane)->anonymous_allowed_from(2400001));
    EXPECT_FALSE((*plane)->anonymous_allowed_from(std::nullopt));
    EXPECT_TRUE((*plane)->anonymous_allowed_from(0));
  }
  EXPECT_EQ(mode_of(dir.path() / kWorkerUidsFile), 0600u);
}

}  // namespace
}  // namespace trainyard::server
