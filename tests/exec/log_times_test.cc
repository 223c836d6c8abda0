#include "exec/log_times.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "exec/executor.h"
#include "exec_test_util.h"

namespace trainyard::exec {
namespace {
namespace fs = std::filesystem;

class LogTimesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ty-log-times-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Appends `text` to the log as the wrapper does, noting its time.
  void append(LogTimesWriter& times, const std::string& text, util::Time at) {
    times.wrote(static_cast<int64_t>(text.size()), at);
    std::ofstream(log(), std::ios::app) << text;
  }
  fs::path log() const { return dir_ / kLogFile; }
  std::string read_from(int64_t offset) const {
    std::ifstream in(log(), std::ios::binary);
    in.seekg(offset);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
};

constexpr util::Time kT0 = util::kEpoch + util::seconds(1'800'000'000);

TEST_F(LogTimesTest, SinceStartsAtTheFirstLineOfThatSecond) {
  const int fd = ::open((dir_ / kLogTimesFile).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  ASSERT_GE(fd, 0);
  LogTimesWriter times(fd, 0);
  append(times, "one\ntw", kT0);
  append(times, "o\n", kT0 + std::chrono::milliseconds(300));  // same second: no entry
  append(times, "three\nfour\n", kT0 + util::seconds(5));
  append(times, "five\n", kT0 + util::seconds(10));
  ::close(fd);
  EXPECT_EQ(read_from(*log_offset_since(log(), kT0)), "one\ntwo\nthree\nfour\nfive\n");
  EXPECT_EQ(read_from(*log_offset_since(log(), kT0 + util::seconds(1))), "three\nfour\nfive\n");
  EXPECT_EQ(read_from(*log_offset_since(log(), kT0 + util::seconds(6))), "five\n");
  EXPECT_EQ(read_from(*log_offset_since(log(), kT0 + util::seconds(11))), "");
}

TEST_F(LogTimesTest, AChunkInTheMiddleOfALineStartsAtTheNextLine) {
  const int fd = ::open((dir_ / kLogTimesFile).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  LogTimesWriter times(fd, 0);
  append(times, "first li", kT0);
  append(times, "ne\nsecond\n", kT0 + util::seconds(2));
  ::close(fd);
  EXPECT_EQ(read_from(*log_offset_since(log(), kT0 + util::seconds(2))), "second\n");
}

TEST_F(LogTimesTest, SinceWithoutTimesFileSaysSo) {
  std::ofstream(log()) << "old output\n";
  auto r = log_offset_since(log(), kT0);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("no line times"), std::string::npos);
  fs::remove(log());
  EXPECT_EQ(*log_offset_since(log(), kT0), 0);  // nothing written yet: nothing to say
}

TEST_F(LogTimesTest, TailCountsLinesFromTheEnd) {
  std::ofstream(log()) << "a\nb\nc\nd\n";
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 2)), "c\nd\n");
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 10)), "a\nb\nc\nd\n");
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 0)), "");
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 4, 10)), "c\nd\n");  // not before `from`
  std::ofstream(log(), std::ios::app) << "partial";
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 1)), "partial");
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 2)), "d\npartial");
}

TEST_F(LogTimesTest, TailReachesAcrossReadBuffers) {
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "line " + std::to_string(i) + "\n";
  std::ofstream(log()) << big;
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 3)), "line 4997\nline 4998\nline 4999\n");
  EXPECT_EQ(read_from(log_offset_of_tail(log(), 0, 5000)), big);
}

TEST(LogTimesFromWrapper, TheWrapperNotesWhenOutputArrives) {
  testing::TempDir dir;
  auto ex = testing::make_executor();
  WorkerLaunch w = testing::sh_worker(dir, "echo early; sleep 1.2; echo late");
  const util::Time before = util::WallClock().now();
  auto ref = ex->launch(w);
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  EXPECT_EQ(testing::wait_for_exit(*ex, *ref, w.run_dir).code, 0);
  const fs::path log = w.run_dir / kLogFile;
  ASSERT_EQ(testing::read_text(log), "early\nlate\n");
  // Output in two different seconds: two entries, the second at the offset of "late".
  std::ifstream times(w.run_dir / kLogTimesFile);
  int64_t offset[2] = {-1, -1}, ms[2] = {0, 0};
  times >> offset[0] >> ms[0] >> offset[1] >> ms[1];
  EXPECT_EQ(offset[0], 0);
  EXPECT_EQ(offset[1], 6);
  EXPECT_GE(ms[1] - ms[0], 1000);
  EXPECT_GE(ms[0] / 1000, (before - util::kEpoch).count() / 1000000);
  EXPECT_EQ(*log_offset_since(log, before), 0);
  auto late = log_offset_since(log, util::kEpoch + std::chrono::milliseconds(ms[1]));
  ASSERT_TRUE(late.is_ok()) << late.status().message();
  EXPECT_EQ(*late, 6);
}

}  // namespace
}  // namespace trainyard::exec
