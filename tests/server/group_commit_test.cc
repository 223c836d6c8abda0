#include "server/group_commit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

namespace trainyard::server {
namespace {

TEST(GroupCommitter, ConcurrentWritesAllCommitAndAFailingOneFailsAlone) {
  const auto dir = std::filesystem::temp_directory_path() / ("ty-gc-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto store = store::Store::open(dir / "state.db");
  ASSERT_TRUE(store.is_ok());
  GroupCommitter gc(**store);
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const bool bad = t == 3 && i % 10 == 0;
        util::Status st = gc.commit([&](store::Store& s) -> util::Status {
          if (bad) return util::invalid_argument("refused");
          store::JobRecord rec{.name = "j", .team = "t", .manifest_json = "{}"};
          return s.insert_job(rec).status();
        });
        (st.is_ok() ? ok : failed)++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 5);
  EXPECT_EQ(ok.load(), 395);
  auto count = (*store)->count_jobs({});
  ASSERT_TRUE(count.is_ok());
  EXPECT_EQ(*count, 395);
  store->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainyard::server
