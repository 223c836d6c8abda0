#include <gtest/gtest.h>

#include <map>

#include "sim/workload.h"
#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;
using testing::shared_trace;
using testing::write_temp;

TEST(TiresiasTrace, LoadsTheSixtyJobTrace) {
  auto w = load_trace("tiresias", shared_trace("tiresias/60_job.csv"), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->jobs.size(), 60u);
  EXPECT_EQ(w->teams, std::vector<std::string>{"default"});
  std::map<int, int> by_gpus;
  for (const TraceJob& j : w->jobs) ++by_gpus[j.spec.total_gpus()];
  EXPECT_EQ(by_gpus, (std::map<int, int>{{1, 30}, {2, 10}, {4, 10}, {8, 10}}));
  // 0,1,0,606,vgg19,164,30 is the first job.
  EXPECT_EQ(w->jobs[0].name, "vgg19-0");
  EXPECT_EQ(w->jobs[0].duration, util::seconds(164));
  EXPECT_EQ(w->jobs[1].submit, util::kEpoch + util::seconds(30));
}

TEST(TiresiasTrace, NamesLineAndColumnOfBadValuesAndSkipsThemWhenAsked) {
  const std::string text =
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,1,0,606,vgg19,164,30\n"
      "1,0,30,133,vgg11,147,23\n"
      "2,2,-4,157,inception4,127,26\n"
      "3,1,79,513,vgg16,0,20\n"
      ",1,79,513,vgg16,5,20\n"
      "5,32,100,513,resnet50,50,20\n";
  const std::string path = write_temp("tiresias_bad.csv", text);
  auto strict = load_tiresias(path, {});
  ASSERT_FALSE(strict.is_ok());
  EXPECT_TRUE(contains(strict.status().message(), "tiresias_bad.csv:3:2: column 'num_gpu'"));
  auto lenient = load_tiresias(path, {.skip_bad_rows = true});
  ASSERT_TRUE(lenient.is_ok()) << lenient.status().to_string();
  EXPECT_EQ(lenient->skipped_rows, 4);
  ASSERT_EQ(lenient->jobs.size(), 2u);
  EXPECT_EQ(lenient->jobs[1].spec.workers, 8);  // 32 GPUs on 4-GPU servers
  EXPECT_EQ(lenient->jobs[1].spec.worker.gpus, 4);
  for (const auto& [row, where] : std::vector<std::pair<std::string, std::string>>{
           {"2,2,-4,157,inception4,127,26", ":2:3: column 'submit_time'"},
           {"3,1,79,513,vgg16,0,20", ":2:6: column 'duration'"},
           {",1,79,513,vgg16,5,20", ":2:1: column 'job_id'"}}) {
    auto w = load_tiresias(
        write_temp("tiresias_row.csv",
                   "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n" + row),
        {});
    ASSERT_FALSE(w.is_ok());
    EXPECT_TRUE(contains(w.status().message(), "tiresias_row.csv" + where));
  }
}

}  // namespace
}  // namespace trainyard::sim
