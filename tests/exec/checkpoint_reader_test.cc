#include "exec/checkpoint_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAbcSha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

class CheckpointReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ty-ckpt-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // A checkpoint whose one file "model" holds "abc".
  void checkpoint(const std::string& name, int64_t step, const std::string& sha = kAbcSha,
                  int64_t size = 3) {
    write(dir_ / name / "model", "abc");
    nlohmann::json m = {{"format", "trainyard-checkpoint"},
                        {"version", 1},
                        {"step", step},
                        {"created", "2026-01-01T00:00:00.000Z"},
                        {"files", {{{"name", "model"}, {"size", size}, {"sha256", sha}}}}};
    write(dir_ / name / "MANIFEST.json", m.dump());
  }
  fs::path dir_;
};

TEST_F(CheckpointReaderTest, ListsNewestFirstAndVerifiesSizesAndHashes) {
  checkpoint("step-10", 10);
  checkpoint("step-20", 20, std::string(64, '0'));  // corrupt: wrong hash
  checkpoint("step-30.tmp", 30);                    // a save in progress
  auto list = list_checkpoints(dir_);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].step, 20);
  EXPECT_FALSE(list[0].verified);
  EXPECT_NE(list[0].problem.find("SHA-256"), std::string::npos);
  EXPECT_EQ(list[1].step, 10);
  EXPECT_TRUE(list[1].verified);
  EXPECT_EQ(list[1].bytes, 3);
  // Without hashes the damaged one passes the size check: that mode is for cheap summaries.
  EXPECT_TRUE(list_checkpoints(dir_, {.check_hashes = false})[0].verified);
}

TEST_F(CheckpointReaderTest, RefusesBadManifests) {
  checkpoint("step-1", 2);                  // step mismatch
  checkpoint("step-3", 3, kAbcSha, 4);      // wrong size
  write(dir_ / "step-4" / "model", "abc");  // no manifest
  checkpoint("step-5", 5);
  write(dir_ / "step-5" / "MANIFEST.json",
        R"({"format":"trainyard-checkpoint","step":5,"files":[{"name":"../x","size":1}]})");
  auto list = list_checkpoints(dir_);
  ASSERT_EQ(list.size(), 4u);
  for (const auto& c : list) EXPECT_FALSE(c.verified) << c.step;
  EXPECT_TRUE(list_checkpoints(dir_ / "missing").empty());
}

TEST_F(CheckpointReaderTest, MetricsTailSkipsALineStillBeingWritten) {
  write(dir_ / "m.jsonl", "{\"step\": 1}\n{\"step\": 2, \"loss\": 0.5}\n{\"step\": 3");
  auto tail = read_metrics_tail(dir_ / "m.jsonl");
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->lines, 2);
  EXPECT_EQ(tail->last["step"], 2);
  EXPECT_FALSE(read_metrics_tail(dir_ / "none.jsonl").has_value());
}

TEST_F(CheckpointReaderTest, AShardedStepWithoutItsManifestIsInProgress) {
  write(dir_ / "step-7" / "rank-0" / "MANIFEST.json", "{}");
  write(dir_ / "step-7" / "rank-1" / "MANIFEST.json", "{}");
  write(dir_ / "step-7" / "rank-2.tmp" / "x", "partial");
  auto list = list_checkpoints(dir_);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_FALSE(list[0].verified);
  EXPECT_NE(list[0].problem.find("sharded save in progress: 2 rank shard(s)"), std::string::npos)
      << list[0].problem;
}

TEST_F(CheckpointReaderTest, MetricsTailKeepsTheNewestTuneChoice) {
  write(dir_ / "m.jsonl",
        "{\"dtype\": \"fp32\", \"tune_micro_batch\": 8, \"tune_speedup\": 1.0}\n"
        "{\"step\": 1}\n"
        "{\"dtype\": \"bf16\", \"tune_micro_batch\": 64, \"tune_accum_steps\": 4, "
        "\"lr\": 0.1}\n"
        "{\"step\": 2, \"dtype\": \"bf16\"}\n");
  auto tail = read_metrics_tail(dir_ / "m.jsonl");
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->last["step"], 2);
  EXPECT_EQ(tail->tuned,
            nlohmann::json({{"dtype", "bf16"}, {"tune_micro_batch", 64}, {"tune_accum_steps", 4}}));
  write(dir_ / "plain.jsonl", "{\"step\": 1}\n");
  EXPECT_TRUE(read_metrics_tail(dir_ / "plain.jsonl")->tuned.is_null());
}

TEST_F(CheckpointReaderTest, LinksFifosAndDevicesAreNeverRead) {
  // A manifest that is a link (the job could point it at any file), a listed file that is a
  // FIFO (opening it would block the server) and one that is a device.
  checkpoint("step-1", 1);
  fs::remove(dir_ / "step-1" / "MANIFEST.json");
  write(dir_ / "elsewhere.json", R"({"format":"trainyard-checkpoint","step":1,"files":[]})");
  fs::create_symlink(dir_ / "elsewhere.json", dir_ / "step-1" / "MANIFEST.json");
  checkpoint("step-2", 2);
  fs::remove(dir_ / "step-2" / "model");
  ASSERT_EQ(::mkfifo((dir_ / "step-2" / "model").c_str(), 0600), 0);
  checkpoint("step-3", 3);
  fs::remove(dir_ / "step-3" / "model");
  fs::create_symlink("/dev/zero", dir_ / "step-3" / "model");
  fs::create_directories(dir_ / "real-4");
  fs::create_symlink(dir_ / "real-4", dir_ / "step-4");  // a step dir that is a link
  checkpoint("real-4", 4);
  auto list = list_checkpoints(dir_);
  ASSERT_EQ(list.size(), 3u);
  for (const auto& c : list) EXPECT_FALSE(c.verified) << c.step;
  EXPECT_NE(list[2].problem.find("not a regular file"), std::string::npos) << list[2].problem;
  EXPECT_NE(list[1].problem.find("model is missing"), std::string::npos) << list[1].problem;
  EXPECT_NE(list[0].problem.find("model is missing"), std::string::npos) << list[0].problem;
}

TEST_F(CheckpointReaderTest, NewestCheckpointIgnoresLinkedManifests) {
  fs::create_directories(dir_ / "step-5");
  write(dir_ / "real.json", "{}");
  fs::create_symlink(dir_ / "real.json", dir_ / "step-5" / "MANIFEST.json");
  EXPECT_FALSE(newest_checkpoint_time(dir_).has_value());
  checkpoint("step-2", 2);
  EXPECT_TRUE(newest_checkpoint_time(dir_).has_value());
}

TEST_F(CheckpointReaderTest, MetricsFileThatIsALinkIsNotRead) {
  write(dir_ / "secret", "{\"token\": \"ty_secret\"}\n");
  fs::create_symlink(dir_ / "secret", dir_ / "m.jsonl");
  EXPECT_FALSE(read_metrics_tail(dir_ / "m.jsonl").has_value());
  ASSERT_EQ(::mkfifo((dir_ / "fifo.jsonl").c_str(), 0600), 0);
  EXPECT_FALSE(read_metrics_tail(dir_ / "fifo.jsonl").has_value());  // and does not block
}

}  // namespace
}  // namespace trainyard::exec
