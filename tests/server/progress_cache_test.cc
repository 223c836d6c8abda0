#include "server/progress_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "server/process_info.h"
#include "server/telemetry_open_minutes.h"

namespace trainyard::server {
namespace {

namespace fs = std::filesystem;

class ProgressCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ty-progress-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    file_ = dir_ / "metrics.jsonl";
  }
  void TearDown() override { fs::remove_all(dir_); }
  // One line per step, a step every 0.5 s from t = 1,700,000,000 s.
  static std::string lines(int from, int to, int total) {
    std::string out;
    for (int step = from; step <= to; ++step)
      out += "{\"time\":" + std::to_string(1'700'000'000.0 + step * 0.5) +
             ",\"step\":" + std::to_string(step) +
             ",\"samples\":8,\"total_steps\":" + std::to_string(total) + "}\n";
    return out;
  }
  void write(const std::string& text) {
    std::ofstream(file_, std::ios::binary | std::ios::trunc) << text;
  }
  fs::path dir_, file_;
};

TEST_F(ProgressCacheTest, ReadsOnlyTheTailOfALargeFile) {
  // ~8 MB of lines, and a first line that does not parse: only the end is read, so it is no
  // obstacle, and the newest step is the file's last.
  write("not json at all\n" + lines(1, 100'000, 200'000));
  ASSERT_GT(fs::file_size(file_), 100 * ProgressCache::kTailBytes);
  ProgressCache cache;
  const auto p = cache.get(7, file_);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->step, 100'000);
  EXPECT_EQ(p->total_steps, 200'000);
  EXPECT_NEAR(*p->steps_per_s, 2.0, 1e-6);
  EXPECT_NEAR(*p->samples_per_s, 16.0, 1e-6);
  EXPECT_NEAR(*p->eta_s, 50'000.0, 1e-3);
}

TEST_F(ProgressCacheTest, KeepsTheAnswerWhileSizeAndMtimeStayAndRereadsWhenTheyChange) {
  write(lines(11, 20, 100));
  ProgressCache cache;
  ASSERT_EQ(cache.get(1, file_)->step, 20);
  struct stat before {};
  ASSERT_EQ(::stat(file_.c_str(), &before), 0);
  // Same size and mtime, other content: the cached answer stands (no read).
  write(lines(21, 30, 100));  // as many bytes
  ASSERT_EQ(fs::file_size(file_), static_cast<uintmax_t>(before.st_size));
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, file_.c_str(), times, 0), 0);
  EXPECT_EQ(cache.get(1, file_)->step, 20);
  // Appended: read again.
  std::ofstream(file_, std::ios::app) << lines(31, 31, 100);
  EXPECT_EQ(cache.get(1, file_)->step, 31);
}

TEST_F(ProgressCacheTest, NothingForMissingFilesLinksAndFilesWithoutSteps) {
  ProgressCache cache;
  EXPECT_FALSE(cache.get(1, dir_ / "none.jsonl").has_value());
  write("{\"time\":1700000000,\"loss\":0.5}\n");
  EXPECT_FALSE(cache.get(1, file_).has_value());
  write(lines(1, 3, 10));
  fs::create_symlink(file_, dir_ / "link.jsonl");
  EXPECT_FALSE(cache.get(2, dir_ / "link.jsonl").has_value());  // a job controls the path
  ASSERT_EQ(::mkfifo((dir_ / "fifo.jsonl").c_str(), 0600), 0);
  EXPECT_FALSE(cache.get(3, dir_ / "fifo.jsonl").has_value());  // and does not block
}

TEST(SummarizeMinutes, OneRowPerDeviceAndMinuteWithMeansAndMaxima) {
  std::vector<telemetry::GpuSample> samples;
  auto add = [&](int64_t ms, const char* uuid, double util, uint64_t mem) {
    telemetry::GpuSample s;
    s.time = util::from_millis(ms);
    s.uuid = uuid;
    s.gpu_util_percent = util;
    s.memory_used_bytes = mem;
    s.memory_total_bytes = 1000;
    samples.push_back(s);
  };
  add(120'000, "GPU-b", 50, 100);
  add(121'000, "GPU-a", 10, 200);
  add(125'000, "GPU-a", 30, 400);
  add(180'500, "GPU-a", 90, 600);  // the next minute
  const auto rows = summarize_minutes(samples);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].device_uuid, "GPU-a");
  EXPECT_EQ(rows[0].samples, 2);
  EXPECT_DOUBLE_EQ(*rows[0].gpu_util_avg, 20.0);
  EXPECT_DOUBLE_EQ(*rows[0].gpu_util_max, 30.0);
  EXPECT_DOUBLE_EQ(*rows[0].mem_used_avg, 300.0);
  EXPECT_EQ(rows[0].mem_used_max, 400);
  EXPECT_EQ(rows[0].mem_total, 1000);
  EXPECT_FALSE(rows[0].power_avg.has_value());
  EXPECT_EQ(rows[1].device_uuid, "GPU-b");
  EXPECT_EQ(rows[2].minute, util::Time(std::chrono::milliseconds(180'000)));
}

TEST(ProcessInfo, DescribesThisProcessAndListsChildren) {
  const auto me = describe_local_process(::getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_NE(me->command.find("ty_server_tests"), std::string::npos) << me->command;
  EXPECT_FALSE(me->user.empty());
  EXPECT_FALSE(describe_local_process(-1).has_value());
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const auto children = child_processes(::getpid());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NE(std::find(children.begin(), children.end(), child), children.end());
}

}  // namespace
}  // namespace trainyard::server
