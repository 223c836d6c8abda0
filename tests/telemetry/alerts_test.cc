#include "telemetry/alerts.h"

#include <cmath>
#include <functional>

#include <gtest/gtest.h>

namespace trainyard::telemetry {
namespace {

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTotal = 80 * kGiB;

const AlertJob kJob{.id = 7, .name = "train", .team = "vision"};

// A healthy, busy GPU running kJob; tests change what they are about.
AlertObservation busy_gpu(int64_t now_ms) {
  AlertObservation o;
  o.sample.time = util::from_millis(now_ms);
  o.sample.index = 0;
  o.sample.uuid = "GPU-0";
  o.sample.model = "H100-80GB";
  o.sample.gpu_util_percent = 95;
  o.sample.memory_used_bytes = 40 * kGiB;
  o.sample.memory_total_bytes = kTotal;
  o.sample.temperature_c = 70;
  o.sample.slowdown_temperature_c = 90;
  o.sample.throttle_reasons = 0;
  o.sample.ecc_uncorrected_volatile = 0;
  o.sample.xid_count = 0;
  o.jobs = {kJob};
  return o;
}

using Tweak = std::function<void(AlertObservation&, int64_t now_ms)>;

// Runs one round per `step_ms` from `from_ms` to `to_ms` (inclusive) and returns every
// transition, each tagged with the round it came from.
struct Rounds {
  std::vector<AlertTransition> all;
  std::vector<int64_t> at;
};
Rounds run(AlertEngine& engine, int64_t from_ms, int64_t to_ms, int64_t step_ms,
           const Tweak& tweak) {
  Rounds r;
  for (int64_t t = from_ms; t <= to_ms; t += step_ms) {
    AlertObservation o = busy_gpu(t);
    tweak(o, t);
    for (auto& tr : engine.evaluate(util::from_millis(t), {o})) {
      r.all.push_back(std::move(tr));
      r.at.push_back(t);
    }
  }
  return r;
}

TEST(AlertEngine, HealthyDataRaisesNothingForAnHour) {
  AlertEngine engine({});
  const Rounds r = run(engine, 0, 60 * kMinute, 5 * kSecond, [](AlertObservation&, int64_t) {});
  EXPECT_TRUE(r.all.empty()) << r.all.front().alert.summary;
  EXPECT_TRUE(engine.firing().empty());
}

TEST(AlertEngine, TemperatureFiresAfterItsDurationOnceAndResolvesBelowTheBand) {
  AlertEngine engine({});
  // Hot from minute 1 to minute 10, then 84 C (inside the 3 C band) to minute 15, then 70 C.
  const Rounds r = run(engine, 0, 20 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    if (t >= kMinute && t < 10 * kMinute) o.sample.temperature_c = 87.5;
    if (t >= 10 * kMinute && t < 15 * kMinute) o.sample.temperature_c = 84;
  });
  ASSERT_EQ(r.all.size(), 2u);
  const Alert& fired = r.all[0].alert;
  EXPECT_TRUE(fired.firing());
  EXPECT_EQ(fired.rule, kRuleGpuTemperature);
  EXPECT_EQ(fired.severity, kSeverityWarning);
  EXPECT_EQ(r.at[0], 6 * kMinute);  // 5 minutes after it first read hot, not before
  EXPECT_EQ(fired.subject.gpu_uuid, "GPU-0");
  ASSERT_EQ(fired.subject.jobs.size(), 1u);
  EXPECT_EQ(fired.subject.jobs[0], kJob);
  EXPECT_NE(fired.summary.find("87.5 C"), std::string::npos) << fired.summary;
  EXPECT_NE(fired.summary.find("85 C"), std::string::npos) << fired.summary;
  const Alert& resolved = r.all[1].alert;
  EXPECT_EQ(resolved.id, fired.id);
  EXPECT_FALSE(resolved.firing());
  // 84 C is in the band: still firing; 70 C from minute 15, clear for one minute at 16.
  EXPECT_EQ(r.at[1], 16 * kMinute);
  EXPECT_EQ(*resolved.resolved, util::from_millis(16 * kMinute));
}

TEST(AlertEngine, ShortHeatSpikesDoNotFire) {
  AlertEngine engine({});
  // Hot for 4 minutes of every 5: never 5 minutes in a row.
  const Rounds r = run(engine, 0, 60 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    if (t % (5 * kMinute) < 4 * kMinute) o.sample.temperature_c = 90;
  });
  for (const auto& tr : r.all) EXPECT_NE(tr.alert.rule, kRuleGpuTemperature);
}

TEST(AlertEngine, SlowdownThresholdReportedByTheCardFiresCritical) {
  AlertRules rules;
  rules.temperature.threshold_c = 95;  // the configured threshold is above the card's
  AlertEngine engine(rules);
  const Rounds r = run(engine, 0, 10 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    if (t >= kMinute) o.sample.temperature_c = 91;
  });
  ASSERT_EQ(r.all.size(), 1u);
  EXPECT_EQ(r.all[0].alert.rule, kRuleGpuSlowdownTemperature);
  EXPECT_EQ(r.all[0].alert.severity, kSeverityCritical);
  EXPECT_EQ(r.at[0], 6 * kMinute);
}

TEST(AlertEngine, ThermalThrottlingFiresAndBenignReasonsDoNot) {
  AlertEngine engine({});
  Rounds r = run(engine, 0, 30 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t) {
    o.sample.throttle_reasons = kThrottleGpuIdle | kThrottleSwPowerCap | kThrottleAppClocks;
  });
  EXPECT_TRUE(r.all.empty());
  r = run(engine, 30 * kMinute, 50 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    if (t < 40 * kMinute) o.sample.throttle_reasons = kThrottleHwThermal | kThrottleSwThermal;
  });
  ASSERT_EQ(r.all.size(), 2u);
  EXPECT_EQ(r.all[0].alert.rule, kRuleGpuThrottling);
  EXPECT_EQ(r.at[0], 35 * kMinute);
  EXPECT_NE(r.all[0].alert.summary.find("hw-thermal"), std::string::npos);
  EXPECT_FALSE(r.all[1].alert.firing());
  EXPECT_EQ(r.at[1], 41 * kMinute);
}

TEST(AlertEngine, EccIncreaseFiresAtOnceOnlyOnceAndResolvesAfterFiveQuietMinutes) {
  AlertEngine engine({});
  const Rounds r = run(engine, 0, 20 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    o.sample.ecc_uncorrected_volatile = 3;                        // history: the baseline
    if (t >= 2 * kMinute) o.sample.ecc_uncorrected_volatile = 4;  // one new error
    if (t >= 3 * kMinute) o.sample.ecc_uncorrected_volatile = 6;  // two more while firing
  });
  ASSERT_EQ(r.all.size(), 2u);
  EXPECT_EQ(r.all[0].alert.rule, kRuleGpuEccUncorrected);
  EXPECT_EQ(r.all[0].alert.severity, kSeverityCritical);
  EXPECT_EQ(r.at[0], 2 * kMinute);
  EXPECT_NE(r.all[0].alert.summary.find("1 new"), std::string::npos) << r.all[0].alert.summary;
  EXPECT_FALSE(r.all[1].alert.firing());
  EXPECT_EQ(r.at[1], 3 * kMinute + 10 * kSecond + 5 * kMinute);
}

TEST(AlertEngine, ApplicationXidWarnsAndDeviceXidIsCritical) {
  EXPECT_TRUE(is_application_xid(13));
  EXPECT_TRUE(is_application_xid(109));
  EXPECT_FALSE(is_application_xid(79));
  EXPECT_FALSE(is_application_xid(48));
  AlertEngine engine({});
  const Rounds r = run(engine, 0, 2 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    if (t >= 30 * kSecond) {
      o.sample.xid_count = 1;
      o.sample.last_xid = 13;
    }
    if (t >= 60 * kSecond) {
      o.sample.xid_count = 2;
      o.sample.last_xid = 79;
    }
  });
  ASSERT_EQ(r.all.size(), 2u);
  EXPECT_EQ(r.all[0].alert.rule, kRuleGpuXid);
  EXPECT_EQ(r.all[0].alert.severity, kSeverityWarning);
  EXPECT_NE(r.all[0].alert.summary.find("XID 13"), std::string::npos);
  EXPECT_EQ(r.all[0].alert.subject.jobs, std::vector<AlertJob>{kJob});
  EXPECT_EQ(r.all[1].alert.severity, kSeverityCritical);
  EXPECT_NE(r.all[1].alert.summary.find("XID 79"), std::string::npos);
  EXPECT_EQ(engine.firing().size(), 2u);
}

TEST(AlertEngine, SteadyMemoryGrowthFiresAfterAWindowAndFlatMemoryDoesNot) {
  AlertEngine engine({});
  // Flat with noise: no alert.
  Rounds r = run(engine, 0, 30 * kMinute, 5 * kSecond, [](AlertObservation& o, int64_t t) {
    o.sample.memory_used_bytes = 40 * kGiB + ((t / kSecond) % 7) * (kGiB / 4);
  });
  EXPECT_TRUE(r.all.empty());
  // Growing 1 GiB a minute (10 GiB = 12.5% over the window): fires once a window is seen.
  AlertEngine leaking({});
  r = run(leaking, 0, 30 * kMinute, 5 * kSecond, [](AlertObservation& o, int64_t t) {
    o.sample.memory_used_bytes = 20 * kGiB + static_cast<uint64_t>(t) * kGiB / kMinute;
  });
  ASSERT_EQ(r.all.size(), 1u);
  const Alert& a = r.all[0].alert;
  EXPECT_EQ(a.rule, kRuleJobMemoryLeak);
  EXPECT_EQ(a.subject.jobs, std::vector<AlertJob>{kJob});
  EXPECT_EQ(a.subject.team, "vision");
  EXPECT_GE(r.at[0], 9 * kMinute);  // not before most of a window is seen
  EXPECT_LE(r.at[0], 10 * kMinute);
  EXPECT_NE(a.summary.find("GiB"), std::string::npos) << a.summary;
}

TEST(AlertEngine, LeakResolvesWhenTheJobLeavesTheGpu) {
  AlertEngine engine({});
  Rounds r = run(engine, 0, 12 * kMinute, 5 * kSecond, [](AlertObservation& o, int64_t t) {
    o.sample.memory_used_bytes = 20 * kGiB + static_cast<uint64_t>(t) * kGiB / kMinute;
  });
  ASSERT_EQ(r.all.size(), 1u);
  AlertObservation gone = busy_gpu(13 * kMinute);
  gone.jobs.clear();
  const auto t = engine.evaluate(util::from_millis(13 * kMinute), {gone});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0].alert.firing());
  EXPECT_EQ(t[0].alert.rule, kRuleJobMemoryLeak);
  EXPECT_EQ(t[0].alert.resolution, "the job no longer holds the GPU");
}

TEST(AlertEngine, IdleGpuHeldByAJobFiresAfterIdleMinutesAndResolvesWhenBusy) {
  AlertEngine engine({});
  const Rounds r = run(engine, 0, 60 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t t) {
    if (t < 40 * kMinute) o.sample.gpu_util_percent = 1;
  });
  ASSERT_EQ(r.all.size(), 2u);
  EXPECT_EQ(r.all[0].alert.rule, kRuleJobGpuIdle);
  EXPECT_EQ(r.at[0], 30 * kMinute);
  EXPECT_NE(r.all[0].alert.summary.find("1.0% utilization"), std::string::npos)
      << r.all[0].alert.summary;
  EXPECT_NE(r.all[0].alert.summary.find("30m"), std::string::npos);
  EXPECT_EQ(r.at[1], 41 * kMinute);
  EXPECT_FALSE(r.all[1].alert.firing());
}

TEST(AlertEngine, IdleGpuWithoutAJobAndIdleShorterThanTheDurationDoNotFire) {
  AlertRules rules;
  rules.idle.fire_after = util::seconds(3);
  AlertEngine engine(rules);
  // No job on the GPU: an idle free GPU is not an alert.
  Rounds r = run(engine, 0, 10 * kMinute, kSecond, [](AlertObservation& o, int64_t) {
    o.jobs.clear();
    o.sample.gpu_util_percent = 0;
  });
  EXPECT_TRUE(r.all.empty());
  // Idle for 2 s at a time: under the 3 s duration.
  r = run(engine, 10 * kMinute, 20 * kMinute, kSecond, [](AlertObservation& o, int64_t t) {
    if ((t / kSecond) % 3 != 0) o.sample.gpu_util_percent = 0;
  });
  EXPECT_TRUE(r.all.empty());
  // Idle for good: fires 3 s after it began.
  r = run(engine, 20 * kMinute, 21 * kMinute, kSecond,
          [](AlertObservation& o, int64_t) { o.sample.gpu_util_percent = 0; });
  ASSERT_EQ(r.all.size(), 1u);
  EXPECT_EQ(r.at[0], 20 * kMinute + 3 * kSecond);
}

TEST(AlertEngine, DisabledRulesStaySilent) {
  AlertRules rules;
  rules.idle.enabled = false;
  rules.temperature.enabled = false;
  AlertEngine engine(rules);
  const Rounds r = run(engine, 0, 60 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t) {
    o.sample.gpu_util_percent = 0;
    o.sample.temperature_c = 99;
  });
  for (const auto& tr : r.all) {
    EXPECT_NE(tr.alert.rule, kRuleJobGpuIdle);
    EXPECT_NE(tr.alert.rule, kRuleGpuTemperature);
  }
}

TEST(AlertEngine, MissingMeasurementsNeitherFireNorResolve) {
  AlertEngine engine({});
  Rounds r = run(engine, 0, 10 * kMinute, 10 * kSecond, [](AlertObservation& o, int64_t) {
    o.sample = GpuSample{.uuid = "GPU-0"};  // nothing measured
  });
  EXPECT_TRUE(r.all.empty());
}

TEST(AlertEngine, TeamBudgetWarnsAt80PercentAndIsCriticalAt100) {
  AlertEngine engine({});
  EXPECT_TRUE(engine.evaluate_budget(util::from_millis(0), "vision", 70, 100).empty());
  auto t = engine.evaluate_budget(util::from_millis(1), "vision", 85, 100);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].alert.rule, kRuleTeamBudget);
  EXPECT_EQ(t[0].alert.severity, kSeverityWarning);
  EXPECT_EQ(t[0].alert.subject.team, "vision");
  EXPECT_NE(t[0].alert.summary.find("85%"), std::string::npos) << t[0].alert.summary;
  EXPECT_TRUE(
      engine.evaluate_budget(util::from_millis(2), "vision", 90, 100).empty());  // no duplicate
  t = engine.evaluate_budget(util::from_millis(3), "vision", 101, 100);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].alert.severity, kSeverityCritical);
  // Budget rounds do not touch GPU rounds: the team alerts survive a round without them.
  EXPECT_TRUE(engine.evaluate(util::from_millis(4), {}).empty());
  EXPECT_EQ(engine.firing().size(), 2u);
  t = engine.evaluate_budget(util::from_millis(5), "vision", 10, 100);  // a new period
  ASSERT_EQ(t.size(), 2u);
  EXPECT_FALSE(t[0].alert.firing());
  EXPECT_FALSE(t[1].alert.firing());
  EXPECT_TRUE(engine.evaluate_budget(util::from_millis(6), "vision", NAN, 100).empty());
  EXPECT_TRUE(engine.evaluate_budget(util::from_millis(6), "vision", 500, 0).empty());
}

TEST(AlertEngine, AlertIdsAreUniqueAcrossEpisodes) {
  AlertRules rules;
  rules.idle.fire_after = util::Duration(0);
  rules.idle.resolve_after = util::Duration(0);
  AlertEngine engine(rules);
  const Rounds r = run(engine, 0, 10 * kSecond, kSecond, [](AlertObservation& o, int64_t t) {
    o.sample.gpu_util_percent = (t / kSecond) % 2 == 0 ? 0 : 90;
  });
  ASSERT_GE(r.all.size(), 4u);
  EXPECT_NE(r.all[0].alert.id, r.all[2].alert.id);
  EXPECT_EQ(r.all[0].alert.id, r.all[1].alert.id);
}

}  // namespace
}  // namespace trainyard::telemetry
