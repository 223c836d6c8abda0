// The Slurm executor's picture of the cluster, from fake squeue and sinfo commands (shell scripts
// printing JSON files the test writes): GPUs that others hold are never freed by one source's
// lag, and a slow answer never replaces a newer one.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "exec/slurm_executor.h"
#include "exec_test_util.h"

namespace trainyard::exec {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
}

// squeue --json with one job (none when `gpus` is 0) of someone else's on n1.
std::string squeue_json(int gpus) {
  std::string jobs;
  if (gpus > 0)
    jobs = R"({"job_id": 41, "name": "someone-else", "comment": "", "job_state": "RUNNING",
              "nodes": "n1", "cpus": 1, "gres_detail": ["gpu:h100:)" +
           std::to_string(gpus) + R"j((IDX:0-1)"]})j";
  return R"({"jobs": [)" + jobs + "]}";
}

// sinfo --json with n1 and n2, two h100 each; `used` GPUs of n1 in use.
std::string sinfo_json(int used) {
  auto node = [](const std::string& name, int u) {
    return R"({"name": ")" + name + R"(", "address": "127.0.0.1", "hostname": "localhost",
              "cpus": 8, "alloc_cpus": 0, "real_memory": 8000, "features": "h100",
              "gres": "gpu:h100:2", "gres_used": "gpu:h100:)" +
           std::to_string(u) + (u > 0 ? "(IDX:0-1)" : "(IDX:N/A)") +
           R"(", "state": "mixed", "state_flags": [], "partitions": ["gpu"], "reason": ""})";
  };
  return R"({"nodes": [)" + node("n1", used) + "," + node("n2", 0) + "]}";
}

class SlurmPicture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path();
    fs::create_directories(dir_ / "bin");
    fs::create_directories(dir_ / "shared");
    const std::string d = dir_.string();
    for (const char* tool : {"sbatch", "scancel"}) script(tool, "exit 0\n");
    // squeue prints the current file; sinfo too, except once when `slow` exists: then it
    // prints the file as it was when it started, 1.5 s later (a loaded machine's answer).
    const std::string at = "D='" + d + "'\n[ \"$1\" = --version ] && exit 0\n";
    script("squeue", at + "cat \"$D/squeue.json\"\n");
    script("sinfo",
           at + "if [ -e \"$D/slow\" ]; then\n"
                "  rm -f \"$D/slow\"; old=$(cat \"$D/sinfo.json\"); touch \"$D/slow-started\"\n"
                "  sleep 1.5; printf '%s\\n' \"$old\"; exit 0\n"
                "fi\n"
                "cat \"$D/sinfo.json\"\n");
  }
  void TearDown() override { ex_.reset(); }  // its refresher thread first, then the dir
  void script(const std::string& name, const std::string& body) {
    const fs::path p = dir_ / "bin" / name;
    write(p, "#!/bin/sh\n" + body);
    fs::permissions(p, fs::perms::owner_all);
  }
  void open() {
    SlurmOptions o;
    o.shared_dir = dir_ / "shared";
    o.bin_dir = (dir_ / "bin").string();
    o.wrapper_path = "/bin/true";
    o.instance = "test";
    o.poll_interval = std::chrono::hours(1);  // refreshes only when the test asks
    o.gpu_sampler = "none";
    auto ex = SlurmExecutor::open(o);
    ASSERT_TRUE(ex.is_ok()) << ex.status().to_string();
    ex_ = std::move(*ex);
  }
  int held_on(const std::string& node) const {
    for (const auto& n : ex_->cluster().nodes)
      if (n.name == node) return n.gpus_used_by_others;
    ADD_FAILURE() << node << " is not in the picture";
    return -1;
  }

  testing::TempDir tmp_;
  fs::path dir_;
  std::unique_ptr<SlurmExecutor> ex_;
};

TEST_F(SlurmPicture, GpusHeldByOthersComeFromTheNodeOrTheQueue) {
  write(dir_ / "squeue.json", squeue_json(0));
  write(dir_ / "sinfo.json", sinfo_json(2));
  open();
  ASSERT_TRUE(ex_->refresh_now().is_ok());
  EXPECT_EQ(held_on("n1"), 2) << "GRES in use on the node, no job of ours there";
  EXPECT_EQ(held_on("n2"), 0);
  // The node's count lags behind the queue: the job squeue lists still holds its GPUs.
  write(dir_ / "squeue.json", squeue_json(2));
  write(dir_ / "sinfo.json", sinfo_json(0));
  ASSERT_TRUE(ex_->refresh_now().is_ok());
  EXPECT_EQ(held_on("n1"), 2) << "a foreign job squeue lists on n1 holds 2 GPUs";
}

TEST_F(SlurmPicture, ASlowAnswerNeverReplacesANewerOne) {
  write(dir_ / "squeue.json", squeue_json(0));
  write(dir_ / "sinfo.json", sinfo_json(0));
  open();
  ASSERT_TRUE(ex_->refresh_now().is_ok());
  EXPECT_EQ(held_on("n1"), 0);
  // A refresh asks; its sinfo is slow. Meanwhile someone takes n1's GPUs and a second refresh
  // sees it. The slow answer, older, arrives last.
  write(dir_ / "slow", "");
  std::thread slow([&] { (void)ex_->refresh_now(); });
  for (int i = 0; i < 500 && !fs::exists(dir_ / "slow-started"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(dir_ / "slow-started")) << "the fake sinfo never started";
  write(dir_ / "sinfo.json", sinfo_json(2));
  ASSERT_TRUE(ex_->refresh_now().is_ok());
  EXPECT_EQ(held_on("n1"), 2);
  slow.join();
  EXPECT_EQ(held_on("n1"), 2) << "the older picture (n1 free) replaced the newer one";
}

}  // namespace
}  // namespace trainyard::exec
