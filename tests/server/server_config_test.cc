#include <gtest/gtest.h>

#include "server/auth.h"
#include "server/config.h"
#include "server/http_api.h"

namespace trainyard::server {
namespace {

TEST(ServerConfig, ParsesEveryKey) {
  auto c = parse_server_config(
      "policy: fair\nplacement: spread\nreconcileIntervalSeconds: 0.25\n"
      "retryBackoff: {initialSeconds: 2, maxSeconds: 60}\nnoticeSignal: SIGUSR1\n"
      "logCapBytes: 1Mi\nmaxRequestBytes: 64Ki\n"
      "teams:\n  - {name: vision, weight: 2, quota: {H100-80GB: 4}}\n",
      "c.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->policy.name, "fair");
  EXPECT_EQ(c->policy.placement, sched::PlacementStrategy::Spread);
  EXPECT_EQ(c->reconcile_interval, util::seconds_f(0.25));
  EXPECT_EQ(c->retry_backoff_max, util::seconds(60));
  EXPECT_EQ(c->notice_signal, 10);
  EXPECT_EQ(c->log_cap_bytes, 1 << 20);
  ASSERT_EQ(c->teams.size(), 1u);
  EXPECT_EQ(c->teams[0].quotas.at("H100-80GB").nominal.value(), 4000);
}

TEST(ServerConfig, ErrorsNameTheLineAndTheFix) {
  auto c = parse_server_config("policy: fastest\n", "c.yaml");
  EXPECT_EQ(c.status().code(), util::StatusCode::InvalidArgument);
  EXPECT_EQ(c.status().message().rfind("c.yaml:1:", 0), 0u) << c.status().message();
  c = parse_server_config("reconcileIntervalSeconds: never\n", "c.yaml");
  EXPECT_NE(c.status().message().find("number of seconds"), std::string::npos);
  c = parse_server_config("nodes: []\n", "c.yaml");
  EXPECT_NE(c.status().message().find("--gpus"), std::string::npos);
  c = parse_server_config("polcy: fifo\n", "c.yaml");
  EXPECT_NE(
      c.status().message().find("c.yaml:1:1: unknown field \"polcy\" (did you mean \"policy\"?"),
      std::string::npos)
      << c.status().message();
  c = parse_server_config("noticeSignal: SIGFOO\n", "c.yaml");
  EXPECT_FALSE(c.is_ok());
  c = parse_server_config("retryBackoff: {initialSeconds: 10, maxSeconds: 1}\n", "c.yaml");
  EXPECT_FALSE(c.is_ok());
}

TEST(ServerConfig, PreemptionAndFairShareKeys) {
  auto c = parse_server_config(
      "policy: tiresias\nminRuntimeSeconds: 120\nmaxVictimSearches: 16\n"
      "fairShareHalfLifeSeconds: 86400\n"
      "tiresias: {queueThresholds: [1000, 5000, 20000], starvationFactor: 4}\n",
      "c.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->policy.min_runtime, util::seconds(120));
  EXPECT_EQ(c->policy.max_victim_searches, 16);
  EXPECT_EQ(c->policy.fair.usage_half_life, util::seconds(86400));
  EXPECT_EQ(c->policy.tiresias.queue_thresholds, (std::vector<double>{1000, 5000, 20000}));
  EXPECT_EQ(c->policy.tiresias.starvation_factor, 4);
  auto g = parse_server_config("policy: goodput\ngoodput: {roundSeconds: 30, restartGain: 0.5}\n",
                               "g.yaml");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->policy.name, "goodput");
  EXPECT_EQ(g->policy.goodput.round, util::seconds(30));
  EXPECT_EQ(g->policy.goodput.restart_gain, 0.5);
  auto d = parse_server_config("policy: fair\n", "d.yaml");
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->policy.min_runtime, util::seconds(300));  // the documented defaults
  EXPECT_EQ(d->policy.max_victim_searches, 128);
  for (
      const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
          {"minRuntimeSeconds: -5\n", "c.yaml:1:20: minRuntimeSeconds must be a number of seconds"},
          {"maxVictimSearches: lots\n", "c.yaml:1:20: maxVictimSearches must be a whole number"},
          {"tiresias: {queueThresholds: [500, 100]}\n",
           "c.yaml:1:35: tiresias.queueThresholds[1] must be more than the entry before (500), got "
           "\"100\" (the thresholds must increase)"},
          {"tiresias: {queueThreshold: [1]}\n",
           "c.yaml:1:12: unknown field \"tiresias.queueThreshold\" (did you mean "
           "\"queueThresholds\"?"},
          {"fairShareHalfLifeSeconds: soon\n", "c.yaml:1:27: fairShareHalfLifeSeconds"},
          {"goodput: {restartGain: -1}\n", "c.yaml:1:24: goodput.restartGain must be a number"},
          {"goodput: {roundSeconds: 0}\n", "goodput.roundSeconds"},
          {"goodput: {roundSecond: 5}\n",
           "unknown field \"goodput.roundSecond\" (did you mean \"roundSeconds\"?"}}) {
    auto bad = parse_server_config(text, "c.yaml");
    ASSERT_FALSE(bad.is_ok()) << text;
    EXPECT_NE(bad.status().message().find(what), std::string::npos) << bad.status().message();
  }
}

// Each section's errors: file:line:column, the key path, what was written and the fix.
void expect_errors(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [text, expected] : cases) {
    auto c = parse_server_config(text, "c.yaml");
    ASSERT_FALSE(c.is_ok()) << text;
    EXPECT_EQ(c.status().code(), util::StatusCode::InvalidArgument) << text;
    EXPECT_EQ(c.status().message(), expected) << text;
  }
}

TEST(ServerConfigErrors, RootKeysAreLocated) {
  expect_errors({
      {"placement: [pack]\n", "c.yaml:1:12: placement must be pack or spread, got a list"},
      {"reconcileIntervalSeconds: 90\n",
       "c.yaml:1:27: reconcileIntervalSeconds must be a number of seconds from 0.01 to 60, got "
       "\"90\""},
      {"retryBackof: {}\n",
       "c.yaml:1:1: unknown field \"retryBackof\" (did you mean \"retryBackoff\"?; allowed: "
       "name, teams, policy, placement, reconcileIntervalSeconds, minRuntimeSeconds, "
       "maxVictimSearches, fairShareHalfLifeSeconds, tiresias, goodput, retryBackoff, "
       "noticeSignal, logCapBytes, maxRequestBytes, telemetry, alerts, mtbfPriorSeconds, "
       "capacity, workers, executor)"},
      {"retryBackoff: {initialSeconds: 10, maxSeconds: 1}\n",
       "c.yaml:1:48: retryBackoff.maxSeconds (1 s) must be at least retryBackoff.initialSeconds "
       "(10 s)"},
      {"noticeSignal: SIGFOO\n",
       "c.yaml:1:15: noticeSignal must be a signal, got \"SIGFOO\" (SIGTERM, SIGINT, SIGHUP, "
       "SIGUSR1, SIGUSR2 or SIGQUIT, with or without SIG, or its number)"},
      {"logCapBytes: 10\n",
       "c.yaml:1:14: logCapBytes must be a size of at least 1Ki, got \"10\" (like 64Mi; suffixes "
       "Ki, Mi, Gi, Ti, k, M, G, T)"},
      {"telemetry: {retentionDays: 0x10}\n",
       "c.yaml:1:28: telemetry.retentionDays must be a whole number from 1 to 3650, got \"0x10\""},
      {"policy: fifo\npolicy: fair\n",
       "c.yaml:2:1: field \"policy\" is given twice (first on line 1)"},
  });
  auto two = parse_server_config("policy: fifo\n---\npolicy: fair\n", "c.yaml");
  ASSERT_FALSE(two.is_ok());
  EXPECT_EQ(two.status().message().rfind("c.yaml:2:", 0), 0u) << two.status().message();
}

TEST(ServerConfigErrors, CapacityIsLocated) {
  expect_errors({
      {"capacity: {seed: [1]}\n",
       "c.yaml:1:18: capacity.seed must be a whole number from 0 to 9223372036854775807, got a "
       "list"},
      {"capacity: {zoneBackof: 60}\n",
       "c.yaml:1:12: unknown field \"capacity.zoneBackof\" (did you mean \"zoneBackoff\"?; "
       "allowed: provider, catalog, seed, interruptionRatePerHour, provisioningDelay, "
       "noticeSeconds, zoneBackoff, spotFallbackWait, throughputs, spotTrace, pools)"},
      {"capacity:\n  pools:\n    - {name: a, provider: aws, instanceType: p3.2xlarge, "
       "maxNodes: 5000}\n",
       "c.yaml:3:68: capacity.pools[0].maxNodes must be a whole number from 1 to 1000, got "
       "\"5000\""},
  });
}

TEST(ServerConfigErrors, ExecutorIsLocated) {
  expect_errors({
      {"executor: {pollSeconds: {}}\n",
       "c.yaml:1:25: executor.pollSeconds must be a number of seconds from 0.1 to 600, got a "
       "mapping"},
      {"executor: {partiton: gpu}\n",
       "c.yaml:1:12: unknown field \"executor.partiton\" (did you mean \"partition\"?; allowed: "
       "kind, partition, sharedDir, slurmConf, binDir, pollSeconds, startTimeoutSeconds, "
       "commandTimeoutSeconds, defaultMemoryMB, gresTypes, gpuSampler)"},
      {"executor: {commandTimeoutSeconds: 900}\n",
       "c.yaml:1:35: executor.commandTimeoutSeconds must be a number of seconds from 1 to 600, "
       "got \"900\""},
      {"executor:\n  kind: slurm\n",
       "c.yaml:1:1: executor.sharedDir is required (kind: slurm needs a directory mounted at the "
       "same path on every node and on the server (run dirs, logs, checkpoints))"},
  });
}

TEST(ServerConfigErrors, WorkersAreLocated) {
  expect_errors({
      {"workers: {runAs: [svc]}\n",
       "c.yaml:1:18: workers.runAs must be a mapping of team names to users, e.g. {vision: svc}, "
       "got a list"},
      {"workers: {uidRang: 1-5}\n",
       "c.yaml:1:11: unknown field \"workers.uidRang\" (did you mean \"uidRange\"?; allowed: "
       "user, uidRange, runAs)"},
      {"workers: {uidRange: 5-4294967295}\n",
       "c.yaml:1:21: workers.uidRange must be FIRST-LAST like 1900000-1965535, got "
       "\"5-4294967295\" (0 < FIRST <= LAST < 4294967295)"},
  });
}

TEST(ServerConfigErrors, AlertsAreLocated) {
  expect_errors({
      {"alerts:\n  temperature: {slowdown: off}\n",
       "c.yaml:2:27: alerts.temperature.slowdown must be true or false, got \"off\""},
      {"alerts:\n  idle: {utilPercen: 5}\n",
       "c.yaml:2:10: unknown field \"alerts.idle.utilPercen\" (did you mean \"utilPercent\"?; "
       "allowed: enabled, utilPercent, idleMinutes, idleFor, for, resolveAfter)"},
      {"alerts:\n  budget: {warnPercent: 150}\n",
       "c.yaml:2:25: alerts.budget.warnPercent must be a number from 1 to 100, got \"150\""},
  });
}

TEST(ServerAuth, TokensAreRandomAndHashed) {
  auto a = generate_token();
  auto b = generate_token();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->size(), 67u);
  EXPECT_EQ(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(bearer_token("Bearer ty_x"), "ty_x");
  EXPECT_EQ(bearer_token("Basic abc"), "");
}

TEST(HttpApi, MapsStatusCodesAndFindsTheField) {
  EXPECT_EQ(http_status(util::StatusCode::InvalidArgument), 400);
  EXPECT_EQ(http_status(util::StatusCode::Unauthenticated), 401);
  EXPECT_EQ(http_status(util::StatusCode::PermissionDenied), 403);
  EXPECT_EQ(http_status(util::StatusCode::NotFound), 404);
  EXPECT_EQ(error_field("job.yaml:14: spec.workers must be a whole number, got \"x\""),
            "spec.workers");
  EXPECT_EQ(error_field("spec.dependsOn: no job named 'x'"), "spec.dependsOn");
  EXPECT_EQ(error_field("something else"), "");
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
}

}  // namespace
}  // namespace trainyard::server
