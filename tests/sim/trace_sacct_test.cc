#include <gtest/gtest.h>

#include "sim/traces/sacct_fields.h"
#include "sim/workload.h"
#include "tests/sim/trace_test_util.h"

namespace trainyard::sim {
namespace {

using testing::contains;
using testing::write_temp;

const std::string kSample = std::string(TY_SOURCE_DIR) + "/tests/data/sacct-sample.txt";
constexpr const char* kHeader =
    "JobID|User|Account|Partition|Submit|Start|End|State|AllocTRES|ReqTRES|Timelimit|NNodes\n";

const TraceJob* by_name(const Workload& w, const std::string& name) {
  for (const TraceJob& j : w.jobs) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

TEST(SacctTrace, LoadsTheSampleAndCountsWhatItDoesNotReplay) {
  auto w = load_trace("auto", kSample, {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  EXPECT_EQ(w->jobs.size(), 14u);
  EXPECT_EQ(w->skipped_rows, 0);
  const std::map<std::string, int64_t> want = {{"job steps", 3},
                                               {"still pending or running", 3},
                                               {"never started", 1},
                                               {"CPU-only jobs", 2}};
  EXPECT_EQ(w->not_replayed, want);
  EXPECT_EQ(w->jobs.front().name, "1001");
  EXPECT_EQ(w->jobs.front().submit, util::kEpoch);
  const std::vector<std::string> teams = {"vision", "nlp", "dave", "speech"};
  EXPECT_EQ(w->teams, teams);
}

TEST(SacctTrace, MapsTimesGpusNodesAndLimits) {
  auto w = load_trace("sacct", kSample, {});
  ASSERT_TRUE(w.is_ok()) << w.status().to_string();
  const TraceJob* j1 = by_name(*w, "1001");
  ASSERT_NE(j1, nullptr);
  EXPECT_EQ(j1->duration, util::seconds(7200));
  EXPECT_EQ(j1->spec.workers, 1);
  EXPECT_EQ(j1->spec.worker.gpus, 8);
  EXPECT_EQ(j1->spec.runtime_limit, util::seconds(4 * 3600));
  EXPECT_EQ(j1->spec.team, "vision");
  // ReqTRES asked for the A100 type: the job may run on A100-80GB only.
  EXPECT_EQ(j1->spec.allowed_gpu_models, std::vector<std::string>{"A100-80GB"});
  const TraceJob* j2 = by_name(*w, "1002");
  ASSERT_NE(j2, nullptr);
  EXPECT_EQ(j2->submit, util::kEpoch + util::seconds(600));
  EXPECT_EQ(j2->spec.workers, 2);
  EXPECT_EQ(j2->spec.worker.gpus, 8);
  EXPECT_EQ(j2->spec.runtime_limit, util::seconds(86400));
  EXPECT_TRUE(j2->spec.allowed_gpu_models.empty());  // asked for any GPU
  EXPECT_EQ(by_name(*w, "1003")->spec.runtime_limit, util::seconds(1800));
  EXPECT_EQ(by_name(*w, "1004")->spec.team, "dave");  // no account: the user
  EXPECT_EQ(by_name(*w, "1004")->duration, util::seconds(7230));
  EXPECT_EQ(by_name(*w, "1005")->duration, util::seconds(600));  // cancelled after running
  EXPECT_NE(by_name(*w, "1008_2"), nullptr);
  EXPECT_NE(by_name(*w, "1009+0"), nullptr);
  EXPECT_EQ(by_name(*w, "1013")->spec.allowed_gpu_models, std::vector<std::string>{"V100-32GB"});
  // Partition_Limit and UNLIMITED leave the limit to finalize() (rounded up from the duration).
  EXPECT_EQ(by_name(*w, "1015")->spec.runtime_limit, util::seconds(4 * 3600));
  const TraceJob* j16 = by_name(*w, "1016");  // 6 GPUs on 4 nodes: 3 workers of 2
  EXPECT_EQ(j16->spec.workers, 3);
  EXPECT_EQ(j16->spec.worker.gpus, 2);
  EXPECT_EQ(by_name(*w, "1017")->duration, util::seconds(1));  // ended in its first second
  EXPECT_EQ(by_name(*w, "1017")->spec.runtime_limit, util::seconds(600));  // "10" = minutes
}

TEST(SacctTrace, GresOverridesReachTheModelConstraint) {
  const std::string path = write_temp(
      "override.txt", std::string(kHeader) +
                          "1|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|"
                          "COMPLETED|gres/gpu=1|gres/gpu:a100=1|01:00:00|1\n");
  TraceOptions opts;
  auto plain = load_trace("sacct", path, opts);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  EXPECT_EQ(plain->jobs[0].spec.allowed_gpu_models, std::vector<std::string>{"A100-80GB"});
  opts.gres_types = {{"a100", "A100-40GB"}};
  auto mapped = load_trace("sacct", path, opts);
  ASSERT_TRUE(mapped.is_ok()) << mapped.status().to_string();
  EXPECT_EQ(mapped->jobs[0].spec.allowed_gpu_models, std::vector<std::string>{"A100-40GB"});
}

constexpr const char* kBadRows[] = {
    "|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1||"
    "|1\n",
    "2|u|a|p|2024-01-01 00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1||"
    "|1\n",
    "3|u|a|p|2024-01-01T00:00:00|2024-01-01T02:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1||"
    "|1\n",
    "4|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=x||"
    "|1\n",
    "5|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1||"
    "1:2:3:4|1\n",
    "6|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1||"
    "|0\n",
    "7|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00||gres/gpu=1|||1\n",
    "8|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1|\n",
    "9|u|a|p||2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1|||1\n",
};

TEST(SacctTrace, BadRowsNameTheColumnAndCanBeSkipped) {
  std::string text = kHeader;
  text +=
      "10|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|"
      "gres/gpu=1|||1\n";
  for (const char* row : kBadRows) text += row;
  const std::string path = write_temp("bad.txt", text);
  auto strict = load_trace("sacct", path, {});
  ASSERT_FALSE(strict.is_ok());
  EXPECT_TRUE(contains(strict.status().message(),
                       "bad.txt:3:1: column 'JobID': the job id is "
                       "empty"));
  EXPECT_TRUE(contains(strict.status().message(), "--skip-bad-rows"));
  auto skipped = load_trace("sacct", path, {.skip_bad_rows = true});
  ASSERT_TRUE(skipped.is_ok()) << skipped.status().to_string();
  EXPECT_EQ(skipped->jobs.size(), 1u);
  EXPECT_EQ(skipped->skipped_rows, static_cast<int64_t>(std::size(kBadRows)));
  // Each bad row alone names its column.
  const char* columns[] = {"'JobID'",     "'Submit'",           "'End'",
                           "'AllocTRES'", "'Timelimit'",        "'NNodes'",
                           "'State'",     "expected 12 fields", "'Submit'"};
  for (size_t i = 0; i < std::size(kBadRows); ++i) {
    auto one = load_trace_from_text("sacct", std::string(kHeader) + kBadRows[i], "one.txt", {});
    ASSERT_FALSE(one.is_ok()) << i;
    EXPECT_TRUE(contains(one.status().message(), columns[i])) << i;
  }
}

TEST(SacctTrace, NoHeaderOutputIsRefusedWithTheHeaderToAdd) {
  auto w = load_trace_from_text(
      "sacct",
      "1|u|a|p|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/"
      "gpu=1||01:00:00|1\n",
      "nohdr.txt", {});
  ASSERT_FALSE(w.is_ok());
  EXPECT_TRUE(contains(w.status().message(), "nohdr.txt:1: the first row is not a sacct header"));
  EXPECT_TRUE(contains(w.status().message(), "JobID|User|Account"));
}

TEST(SacctFields, TimeLimitsInEverySlurmForm) {
  const std::pair<const char*, int64_t> ok[] = {
      {"10", 600},      {"30:00", 1800},    {"04:00:00", 14400}, {"1-00:00:00", 86400},
      {"2-12", 216000}, {"1-01:30", 91800}, {"00:00:01", 1},
  };
  for (auto [text, secs] : ok) {
    auto v = parse_slurm_timelimit(text);
    ASSERT_TRUE(v.is_ok()) << text;
    EXPECT_EQ(**v, secs) << text;
  }
  for (const char* none : {"UNLIMITED", "Partition_Limit", "INFINITE", ""}) {
    auto v = parse_slurm_timelimit(none);
    ASSERT_TRUE(v.is_ok()) << none;
    EXPECT_FALSE(v->has_value()) << none;
  }
  for (const char* bad : {"00:00:00", "1:2:3:4", "-1", "a", "1-", "1--1", "99999999999"}) {
    EXPECT_FALSE(parse_slurm_timelimit(bad).is_ok()) << bad;
  }
}

TEST(SacctFields, TresAndTimesAndStates) {
  auto g = parse_tres_gpus("billing=8,cpu=16,gres/gpu:a100=4,gres/gpu=4,gres/gpumem=80G,mem=64G");
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->count, 4);
  EXPECT_EQ(g->type, "a100");
  auto typed = parse_tres_gpus("gres/gpu:a100=2,gres/gpu:v100=1");
  ASSERT_TRUE(typed.is_ok());
  EXPECT_EQ(typed->count, 3);
  EXPECT_EQ(typed->type, "");
  EXPECT_EQ(parse_tres_gpus("cpu=4")->count, 0);
  EXPECT_FALSE(parse_tres_gpus("gres/gpu=-1").is_ok());
  EXPECT_EQ(**parse_sacct_time("1970-01-02T00:00:01"), 86401);
  EXPECT_FALSE(parse_sacct_time("Unknown")->has_value());
  EXPECT_FALSE(parse_sacct_time("2024-13-01T00:00:00").is_ok());
  EXPECT_EQ(sacct_state_word("CANCELLED by 123"), "CANCELLED");
  EXPECT_EQ(sacct_state_word("CANCELLED+"), "CANCELLED");
}

}  // namespace
}  // namespace trainyard::sim
