#include <gtest/gtest.h>

#include "sim/workload.h"
#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;
using testing::shared_trace;
using testing::write_temp;

TEST(PhillyTrace, LoadsTheBundledTraceWithItsDocumentedCounts) {
  auto w = load_trace("philly", shared_trace("philly-pollux/philly.csv"), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->jobs.size(), 82247u);
  EXPECT_EQ(w->teams.size(), 15u);
  EXPECT_EQ(w->skipped_rows, 0);
  // The README's histogram: 1:76,627 2:1,818 4:1,870 8:1,643 12:7 16:199 24:7 32:67 64:6 128:3.
  int64_t total_gpus = 0;
  int jobs_of_128 = 0;
  for (const TraceJob& j : w->jobs) {
    total_gpus += j.spec.total_gpus();
    EXPECT_LE(j.spec.worker.gpus, 8);
    if (j.spec.total_gpus() == 128) {
      ++jobs_of_128;
      EXPECT_EQ(j.spec.workers, 16);
    }
  }
  EXPECT_EQ(total_gpus, 107235);
  EXPECT_EQ(jobs_of_128, 3);
  EXPECT_EQ(w->jobs.front().submit, util::kEpoch);
  EXPECT_EQ(w->jobs.front().id, util::JobId(1));
  EXPECT_EQ(w->jobs.back().id, util::JobId(82247));
}

TEST(PhillyTrace, SplitsTwelveGpusIntoTwoWorkersOfSix) {
  const std::string path = write_temp("philly_gang.csv",
                                      "timestamp,duration,num_gpus,gpu_time,cluster\n"
                                      "2017-10-09 07:01:55,66.0,12,792.0,vc1\n");
  auto w = load_philly(path, {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->jobs[0].spec.workers, 2);
  EXPECT_EQ(w->jobs[0].spec.worker.gpus, 6);
  EXPECT_EQ(w->jobs[0].duration, util::seconds(66));
  EXPECT_EQ(w->jobs[0].spec.team, "vc1");
}

constexpr const char* kBadPhilly =
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "2017-10-09 07:01:55,66.0,1,66.0,vc1\n"
    "2017-13-09 07:01:55,66.0,1,66.0,vc1\n"
    "2017-10-09 07:02:55,-5,1,66.0,vc1\n"
    "2017-10-09 07:03:55,10,0,66.0,vc1\n"
    "2017-10-09 07:04:55,10,1,10,\n"
    "2017-10-09 07:05:55,10,1,10\n"
    "2017-10-09 07:06:55,1e300,1,10,vc1\n"
    "2017-10-09 07:07:55,10,1,10,vc2\n";

TEST(PhillyTrace, NamesFileLineAndColumnOfTheFirstBadRow) {
  const std::string path = write_temp("philly_bad.csv", kBadPhilly);
  auto w = load_philly(path, {});
  ASSERT_FALSE(w.is_ok());
  EXPECT_TRUE(contains(w.status().message(), "philly_bad.csv:3:1: column 'timestamp'"));
  EXPECT_TRUE(contains(w.status().message(), "YYYY-MM-DD HH:MM:SS"));
  EXPECT_TRUE(contains(w.status().message(), "--skip-bad-rows"));
}

TEST(PhillyTrace, SkipsAndCountsBadRowsWhenAsked) {
  const std::string path = write_temp("philly_bad.csv", kBadPhilly);
  auto w = load_philly(path, {.skip_bad_rows = true});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->skipped_rows, 6);
}

TEST(PhillyTrace, ReportsEachKindOfBadValue) {
  const std::string header = "timestamp,duration,num_gpus,gpu_time,cluster\n";
  struct Case {
    std::string row, where;
  };
  for (const Case& c : {
           Case{"2017-10-09 07:02:55,-5,1,66.0,vc1", ":2:2: column 'duration'"},
           Case{"2017-10-09 07:02:55,1e300,1,66.0,vc1", ":2:2: column 'duration'"},
           Case{"2017-10-09 07:03:55,10,0,66.0,vc1", ":2:3: column 'num_gpus'"},
           Case{"2017-10-09 07:03:55,10,two,66.0,vc1", ":2:3: column 'num_gpus'"},
           Case{"2017-10-09 07:04:55,10,1,10,", ":2:5: column 'cluster'"},
           Case{"2017-10-09 -1:04:55,10,1,10,vc1", ":2:1: column 'timestamp'"},
           Case{"2017-10-09 07:05:55,10,1,10", ":2: expected 5 fields"},
       }) {
    const std::string path = write_temp("philly_case.csv", header + c.row + "\n");
    auto w = load_philly(path, {});
    ASSERT_FALSE(w.is_ok()) << c.row;
    EXPECT_TRUE(contains(w.status().message(), "philly_case.csv" + c.where)) << c.row;
  }
}

TEST(PhillyTrace, RefusesAFileWithoutTheNeededColumns) {
  const std::string path = write_temp("philly_cols.csv", "timestamp,duration\n1,2\n");
  auto w = load_philly(path, {});
  ASSERT_FALSE(w.is_ok());
  EXPECT_TRUE(contains(w.status().message(), "missing column 'num_gpus'"));
}

}  // namespace
}  // namespace trainyard::sim
