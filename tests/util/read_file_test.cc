#include "util/read_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace trainyard::util {
namespace {

namespace fs = std::filesystem;

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ty-read-file-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(ReadFileTest, ReadsTheWholeFileByteForByte) {
  std::string text = "a,b\r\n1,\"2\"\n";
  text.push_back('\0');
  text += std::string(200000, 'x');  // more than one read(2) buffer
  const auto read = read_file(write("t.csv", text));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, text);
}

TEST_F(ReadFileTest, ReadsAnEmptyFileAsEmptyText) {
  const auto read = read_file(write("empty", ""));
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(*read, "");
}

TEST_F(ReadFileTest, ReadsProcFilesThatReportNoSize) {
  const auto read = read_file("/proc/self/stat");
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(read->substr(0, read->find(' ')), std::to_string(::getpid()));
}

TEST_F(ReadFileTest, MissingFileIsNotFoundNamingThePathAndTheReason) {
  const fs::path path = dir_ / "nope.yaml";
  const auto read = read_file(path);
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().code(), StatusCode::NotFound);
  EXPECT_EQ(read.status().message(), path.string() + ": cannot open: No such file or directory");
}

TEST_F(ReadFileTest, WhatNamesTheFileInTheError) {
  const fs::path path = dir_ / "cluster.yaml";
  const auto read = read_file(path, {.what = "the cluster file"});
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().message(),
            path.string() + ": cannot open the cluster file: No such file or directory");
}

TEST_F(ReadFileTest, DirectoryOpensButIsAnInvalidArgumentWhenRead) {
  const auto read = read_file(dir_, {.what = "the metrics file"});
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(read.status().message(),
            dir_.string() + ": cannot read the metrics file: Is a directory");
}

TEST_F(ReadFileTest, FollowsSymlinks) {
  const fs::path target = write("target", "hello");
  fs::create_symlink(target, dir_ / "link");
  const auto read = read_file(dir_ / "link");
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(*read, "hello");
}

TEST_F(ReadFileTest, MaxBytesAcceptsAFileOfExactlyThatSize) {
  const auto read = read_file(write("f", "12345"), {.max_bytes = 5});
  ASSERT_TRUE(read.is_ok());
  EXPECT_EQ(*read, "12345");
}

TEST_F(ReadFileTest, MaxBytesRefusesALargerFileAsOutOfRange) {
  const fs::path path = write("f", "123456");
  const auto read = read_file(path, {.max_bytes = 5});
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().code(), StatusCode::OutOfRange);
  EXPECT_EQ(read.status().message(), path.string() + ": is larger than 5 bytes");
  const auto named = read_file(path, {.max_bytes = 5, .what = "the trace"});
  EXPECT_EQ(named.status().message(), path.string() + ": the trace is larger than 5 bytes");
}

TEST_F(ReadFileTest, MaxBytesAppliesToFilesThatReportNoSize) {
  const auto read = read_file("/proc/self/status", {.max_bytes = 10});
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().code(), StatusCode::OutOfRange);
}

}  // namespace
}  // namespace trainyard::util
