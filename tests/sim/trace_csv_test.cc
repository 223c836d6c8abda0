#include <gtest/gtest.h>

#include "sim/workload.h"
#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;
using testing::write_temp;

constexpr const char* kFullHeader =
    "id,name,submit_time,duration,workers,gpus,gpu_milli,mig_profile,cpu,memory,team,priority,"
    "gpu_model,runtime_limit,preemptible,checkpoint_interval,depends_on\n";

// Rows out of submit order, so ids (assigned in submit order) differ from row order.
const std::string kFullTrace = std::string(kFullHeader) +
                               "prep,prepare data,100,60,1,0,,,4,16Gi,vision,,,,,,\n"
                               "a,train,\"200.5\",3600,2,8,,,32,256Gi,vision,1000,H100|a100,7200,"
                               "false,600,prep\n"
                               "b,\"eval, small\",50,30,1,0,500,,500m,8Gi,nlp,5,L4,,true,,\n"
                               "c,report,300,10,1,0,,1g.10gb,1,1Gi,nlp,100,,,,,a|prepare data\n";

TEST(CsvTrace, ReadsEveryOptionalColumn) {
  auto w = load_csv_trace(write_temp("full.csv", kFullTrace), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->jobs.size(), 4u);
  // Sorted by submit: b (50), prep (100), a (200.5), c (300), numbered 1..4.
  const TraceJob& b = w->jobs[0];
  const TraceJob& prep = w->jobs[1];
  const TraceJob& a = w->jobs[2];
  const TraceJob& c = w->jobs[3];
  EXPECT_EQ(b.name, "eval, small");
  EXPECT_EQ(b.spec.worker.gpu_milli, model::GpuMilli(500));
  EXPECT_EQ(b.spec.worker.cpu, model::CpuMilli(500));
  EXPECT_EQ(b.spec.priority_class, "low");
  EXPECT_TRUE(b.spec.preemptible);
  EXPECT_EQ(prep.spec.team, "vision");
  EXPECT_FALSE(prep.has_priority);
  EXPECT_FALSE(prep.has_runtime_limit);
  EXPECT_EQ(a.id, util::JobId(3));
  EXPECT_EQ(a.submit, util::from_seconds(200.5));
  EXPECT_EQ(a.duration, util::seconds(3600));
  EXPECT_EQ(a.spec.workers, 2);
  EXPECT_EQ(a.spec.worker.gpus, 8);
  EXPECT_EQ(a.spec.worker.memory, model::gib(256));
  EXPECT_EQ(a.spec.priority, 1000);
  EXPECT_EQ(a.spec.priority_class, "high");
  EXPECT_TRUE(a.has_priority);
  EXPECT_EQ(a.spec.allowed_gpu_models, (std::vector<std::string>{"H100-80GB", "A100-80GB"}));
  EXPECT_EQ(a.spec.runtime_limit, util::seconds(7200));
  EXPECT_TRUE(a.has_runtime_limit);
  EXPECT_FALSE(a.spec.preemptible);
  EXPECT_EQ(a.spec.checkpoint_interval, util::seconds(600));
  EXPECT_EQ(a.spec.depends_on, std::vector<util::JobId>{prep.id});
  EXPECT_EQ(c.spec.worker.mig_profile, "1g.10gb");
  EXPECT_EQ(c.spec.depends_on, (std::vector<util::JobId>{a.id, prep.id}));
}

TEST(CsvTrace, DependenciesSurviveFinalize) {
  auto w = load_trace("csv", write_temp("deps.csv", kFullTrace), {.seed = 7});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  auto by_name = [&](const std::string& name) -> const TraceJob& {
    for (const TraceJob& j : w->jobs) {
      if (j.name == name) return j;
    }
    ADD_FAILURE() << name;
    return w->jobs.front();
  };
  EXPECT_EQ(by_name("train").spec.depends_on, std::vector<util::JobId>{by_name("prepare data").id});
  EXPECT_EQ(by_name("report").spec.depends_on,
            (std::vector<util::JobId>{by_name("train").id, by_name("prepare data").id}));
}

TEST(CsvTrace, RoundTripsThroughItsWriter) {
  auto first = load_trace("csv", write_temp("full.csv", kFullTrace), {});
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  const std::string text = format_csv_trace(*first);
  auto second = load_trace("csv", write_temp("again.csv", text), {});
  ASSERT_TRUE(second.is_ok()) << second.status().to_string() << "\n" << text;
  ASSERT_EQ(second->jobs.size(), first->jobs.size());
  EXPECT_EQ(format_csv_trace(*second), text);
  for (size_t i = 0; i < first->jobs.size(); ++i) {
    const TraceJob& x = first->jobs[i];
    const TraceJob& y = second->jobs[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.submit, y.submit);
    EXPECT_EQ(x.duration, y.duration);
    EXPECT_EQ(x.spec.workers, y.spec.workers);
    EXPECT_EQ(x.spec.worker.gpus, y.spec.worker.gpus);
    EXPECT_EQ(x.spec.worker.gpu_milli, y.spec.worker.gpu_milli);
    EXPECT_EQ(x.spec.worker.mig_profile, y.spec.worker.mig_profile);
    EXPECT_EQ(x.spec.worker.cpu, y.spec.worker.cpu);
    EXPECT_EQ(x.spec.worker.memory, y.spec.worker.memory);
    EXPECT_EQ(x.spec.team, y.spec.team);
    EXPECT_EQ(x.spec.priority, y.spec.priority);
    EXPECT_EQ(x.spec.priority_class, y.spec.priority_class);
    EXPECT_EQ(x.spec.allowed_gpu_models, y.spec.allowed_gpu_models);
    EXPECT_EQ(x.spec.runtime_limit, y.spec.runtime_limit);
    EXPECT_EQ(x.spec.preemptible, y.spec.preemptible);
    EXPECT_EQ(x.spec.checkpoint_interval, y.spec.checkpoint_interval);
    EXPECT_EQ(x.spec.depends_on, y.spec.depends_on);
  }
}

TEST(CsvTrace, NeedsOnlyTheThreeRequiredColumns) {
  auto w =
      load_trace("csv", write_temp("min.csv", "submit_time,duration,gpus\n0,10,1\n5,20,2\n"), {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[1].spec.worker.gpus, 2);
  EXPECT_EQ(w->jobs[1].spec.team, "default");
  EXPECT_EQ(w->jobs[1].name, "job-2");
}

TEST(CsvTrace, RefusesUnknownColumnsListingTheKnownOnes) {
  auto w =
      load_csv_trace(write_temp("unknown.csv", "submit_time,duration,gpus,color\n0,1,1,red\n"), {});
  ASSERT_FALSE(w.is_ok());
  EXPECT_TRUE(contains(w.status().message(), "unknown.csv:1:4: column 'color': unknown column"));
  EXPECT_TRUE(contains(w.status().message(), "checkpoint_interval, depends_on"));
  auto missing = load_csv_trace(write_temp("missing.csv", "submit_time,gpus\n0,1\n"), {});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_TRUE(contains(missing.status().message(), "missing column 'duration'"));
  auto twice =
      load_csv_trace(write_temp("twice.csv", "submit_time,duration,gpus,gpus\n0,1,1,1\n"), {});
  ASSERT_FALSE(twice.is_ok());
  EXPECT_TRUE(contains(twice.status().message(), "twice.csv:1:4: column 'gpus'"));
}

TEST(CsvTrace, NamesLineAndColumnOfEachBadValue) {
  const std::string header =
      "id,submit_time,duration,gpus,gpu_milli,mig_profile,cpu,memory,"
      "priority,preemptible,runtime_limit,checkpoint_interval,depends_on,"
      "workers\n";
  const std::string first = "j1,0,10,1,,,,,,,,,,\n";
  for (const auto& [row, where] : std::vector<std::pair<std::string, std::string>>{
           {"j2,-1,10,1,,,,,,,,,,", ":3:2: column 'submit_time'"},
           {"j2,0,0,1,,,,,,,,,,", ":3:3: column 'duration'"},
           {"j2,0,10,17,,,,,,,,,,", ":3:4: column 'gpus'"},
           {"j2,0,10,1,500,,,,,,,,,", ":3:5: column 'gpu_milli': a worker takes whole GPUs"},
           {"j2,0,10,0,1000,,,,,,,,,", ":3:5: column 'gpu_milli'"},
           {"j2,0,10,0,,9g.1tb,,,,,,,,", ":3:6: column 'mig_profile': unknown MIG profile"},
           {"j2,0,10,1,,1g.10gb,,,,,,,,", ":3:6: column 'mig_profile'"},
           {"j2,0,10,1,,,lots,,,,,,,", ":3:7: column 'cpu'"},
           {"j2,0,10,1,,,,32GB,,,,,,", ":3:8: column 'memory'"},
           {"j2,0,10,1,,,,,high,,,,,", ":3:9: column 'priority'"},
           {"j2,0,10,1,,,,,,maybe,,,,", ":3:10: column 'preemptible'"},
           {"j2,0,10,1,,,,,,,-5,,,", ":3:11: column 'runtime_limit'"},
           {"j2,0,10,1,,,,,,,,x,,", ":3:12: column 'checkpoint_interval'"},
           {"j2,0,10,1,,,,,,,,,nope,", ":3:13: column 'depends_on': no row above"},
           {"j2,0,10,1,,,,,,,,,j2,", ":3:13: column 'depends_on'"},
           {"j2,0,10,1,,,,,,,,,j1||j1,", ":3:13: column 'depends_on': empty item"},
           {"j1,0,10,1,,,,,,,,,,", ":3:1: column 'id': id 'j1' is already used on line 2"},
           {"j2,0,10,1,,,,,,,,,,0", ":3:14: column 'workers'"},
       }) {
    auto w = load_csv_trace(write_temp("bad.csv", header + first + row + "\n"), {});
    ASSERT_FALSE(w.is_ok()) << row;
    EXPECT_TRUE(contains(w.status().message(), "bad.csv" + where)) << row;
  }
}

TEST(CsvTrace, RefusesADependencyOnALaterSubmittedJob) {
  auto w = load_csv_trace(
      write_temp("late.csv", "id,submit_time,duration,gpus,depends_on\na,100,10,1,\nb,50,10,1,a\n"),
      {});
  ASSERT_FALSE(w.is_ok());
  EXPECT_TRUE(contains(w.status().message(),
                       "late.csv:3:5: column 'depends_on': 'a' (line 2) is "
                       "submitted at 100 s, after this job (50 s)"));
}

TEST(CsvTrace, RefusesAnAmbiguousNameButAcceptsTheId) {
  const std::string head =
      "id,name,submit_time,duration,gpus,depends_on\n"
      "1,train,0,10,1,\n2,train,0,10,1,\n";
  auto ambiguous = load_csv_trace(write_temp("amb.csv", head + "3,eval,1,1,1,train\n"), {});
  ASSERT_FALSE(ambiguous.is_ok());
  EXPECT_TRUE(contains(ambiguous.status().message(),
                       "amb.csv:4:6: column 'depends_on': 'train' "
                       "names more than one earlier row"));
  auto by_id = load_csv_trace(write_temp("amb.csv", head + "3,eval,1,1,1,2\n"), {});
  ASSERT_TRUE(by_id.is_ok()) << by_id.status().to_string();
  EXPECT_EQ(by_id->jobs[2].spec.depends_on, std::vector<util::JobId>{util::JobId(2)});
}

TEST(CsvTrace, SkipsBadRowsAndTheRowsThatDependOnThem) {
  const std::string text =
      "id,submit_time,duration,gpus,depends_on\n"
      "a,0,10,1,\n"
      "b,1,-10,1,\n"
      "c,2,10,1,b\n"
      "d,3,10,1,a\n";
  auto w = load_csv_trace(write_temp("skip.csv", text), {.skip_bad_rows = true});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->skipped_rows, 2);
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[1].name, "d");
  EXPECT_EQ(w->jobs[1].spec.depends_on, std::vector<util::JobId>{util::JobId(1)});
}

TEST(CsvTrace, MaxJobsKeepsEveryDependencyOfTheKeptJobs) {
  auto w = load_trace("csv", write_temp("max.csv", kFullTrace), {.max_jobs = 3});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  ASSERT_EQ(w->jobs.size(), 3u);
  for (const TraceJob& j : w->jobs) {
    for (util::JobId d : j.spec.depends_on) EXPECT_LT(d, j.id);
  }
}

}  // namespace
}  // namespace trainyard::sim
