// Kill -9 durability: a child process commits jobs and acknowledges each id on a pipe only after
// its commit returned; the parent kills it at a random moment and checks that every
// acknowledged job (and its event) is in the file.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/store.h"
#include "tests/store/store_test_util.h"

namespace trainyard::store {
namespace {

bool write_all(int fd, const void* data, size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads one acknowledged id; false at end of stream.
bool read_id(int fd, int64_t& id) {
  char* bytes = reinterpret_cast<char*>(&id);
  size_t got = 0;
  while (got < sizeof id) {
    ssize_t n = ::read(fd, bytes + got, sizeof id - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// The child: commits until killed. batch == 0: one autocommitted insert_job per write;
// otherwise `batch` jobs with an event each per transaction(). Never returns.
[[noreturn]] void run_writer(const std::filesystem::path& db, int fd, int batch) {
  auto opened = Store::open(db);
  if (!opened.is_ok()) ::_exit(2);
  StorePtr store = std::move(opened).value();
  while (true) {
    std::vector<int64_t> ids;
    util::Status status;
    if (batch == 0) {
      auto id = store->insert_job(make_job("solo"));
      status = id.status();
      if (id.is_ok()) ids.push_back(id->value());
    } else {
      status = store->transaction([&]() -> util::Status {
        for (int i = 0; i < batch; ++i) {
          TY_ASSIGN_OR_RETURN(util::JobId id, store->insert_job(make_job("batched")));
          TY_RETURN_IF_ERROR(store->append_event(make_event(id)).status());
          ids.push_back(id.value());
        }
        return util::Status::ok();
      });
    }
    if (!status.is_ok()) ::_exit(3);
    for (int64_t id : ids) {
      if (!write_all(fd, &id, sizeof id)) ::_exit(4);
    }
  }
}

TEST(StoreDurability, EveryAcknowledgedCommitSurvivesKill9) {
  TempDir dir;
  const uint32_t seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(5, 120);
  int64_t acknowledged_total = 0;
  int max_unacknowledged = 0;  // committed jobs whose ids the child had no time to send

  for (int batch : {0, 1, 16, 0, 4, 64}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      run_writer(dir.db(), fds[1], batch);
    }
    ::close(fds[1]);
    std::vector<int64_t> acked;
    int64_t id = 0;
    // Wait for the first acknowledgement so that the kill lands while commits are flowing.
    ASSERT_TRUE(read_id(fds[0], id)) << "the writer died before its first commit";
    acked.push_back(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    int wait_status = 0;
    ASSERT_EQ(::waitpid(child, &wait_status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wait_status)) << "writer exited with " << WEXITSTATUS(wait_status);
    while (read_id(fds[0], id)) acked.push_back(id);
    ::close(fds[0]);

    StorePtr store = open_or_fail(dir.db());
    ASSERT_NE(store, nullptr);
    for (int64_t acked_id : acked) {
      auto job = store->get_job(util::JobId(acked_id));
      ASSERT_TRUE(job.is_ok() && job->has_value()) << "acknowledged job " << acked_id << " lost";
      if (batch > 0) {
        ASSERT_EQ(store->events(util::JobId(acked_id))->size(), 1u) << acked_id;
      }
    }
    acknowledged_total += static_cast<int64_t>(acked.size());
    max_unacknowledged += std::max(batch, 1);
    int64_t stored = *store->count_jobs({});
    EXPECT_GE(stored, acknowledged_total);
    EXPECT_LE(stored, acknowledged_total + max_unacknowledged);
  }
}

}  // namespace
}  // namespace trainyard::store
