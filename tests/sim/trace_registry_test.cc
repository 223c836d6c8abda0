#include <gtest/gtest.h>

#include "sim/workload.h"
#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;
using testing::shared_trace;
using testing::write_temp;

TEST(TraceRegistry, ListsEveryFormat) {
  EXPECT_EQ(trace_formats(), (std::vector<std::string>{"philly", "alibaba", "tiresias", "sia",
                                                       "pollux", "csv", "sacct"}));
}

TEST(TraceRegistry, GuessesEachBundledFormatFromItsHeader) {
  struct Case {
    std::string path;
    size_t jobs;
  };
  for (const Case& c : {
           Case{"philly-pollux/philly.csv", 82247},
           Case{"alibaba-gpu-v2023/openb_pod_list_default.csv", 8152},
           Case{"tiresias/60_job.csv", 60},
           Case{"sia-workloads/philly/workload-3.csv", 160},
           Case{"pollux-workloads/workloads/workload-3.csv", 160},
       }) {
    auto w = load_trace("auto", shared_trace(c.path), {});
    ASSERT_TRUE(w.is_ok()) << c.path << ": " << w.status().to_string();
    EXPECT_EQ(w->jobs.size(), c.jobs) << c.path;
  }
  auto csv = load_trace("auto", write_temp("g.csv", "submit_time,duration,gpus\n0,1,1\n"), {});
  ASSERT_TRUE(csv.is_ok()) << csv.status().to_string();
  EXPECT_EQ(csv->jobs.size(), 1u);
}

TEST(TraceRegistry, ExplainsWhatItCannotRead) {
  auto unknown = load_trace("excel", shared_trace("tiresias/60_job.csv"), {});
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_TRUE(contains(unknown.status().message(), "philly, alibaba, tiresias, sia, pollux, csv"));
  auto unguessable = load_trace("auto", write_temp("odd.csv", "a,b\n1,2\n"), {});
  ASSERT_FALSE(unguessable.is_ok());
  EXPECT_TRUE(contains(unguessable.status().message(), "--trace-format"));
  auto missing = load_trace("philly", "/nonexistent/trace.csv", {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), util::StatusCode::NotFound);
  auto empty = load_trace("csv", write_temp("empty.csv", ""), {});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_TRUE(contains(empty.status().message(), "empty"));
}

TEST(TraceRegistry, LoadsFromTextLikeFromAFile) {
  const std::string text =
      "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
      "0,1,10,1,vgg,5,1\n1,2,20,1,vgg,6,1\n";
  auto from_text = load_trace_from_text("auto", text, "inline.csv", {});
  auto from_file = load_trace("auto", write_temp("inline.csv", text), {});
  ASSERT_TRUE(from_text.is_ok()) << from_text.status().to_string();
  ASSERT_TRUE(from_file.is_ok());
  EXPECT_EQ(format_csv_trace(*from_text), format_csv_trace(*from_file));
  EXPECT_EQ(from_text->source, "inline.csv");
}

}  // namespace
}  // namespace trainyard::sim
