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
  for (const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
           {"minRuntimeSeconds: -5\n", "c.yaml:1: minRuntimeSeconds must be a number of seconds"},
           {"maxVictimSearches: lots\n", "c.yaml:1: maxVictimSearches must be a whole number"},
           {"tiresias: {queueThresholds: [500, 100]}\n", "must increase"},
           {"tiresias: {thresholds: [1]}\n", "unknown key tiresias.thresholds"},
           {"fairShareHalfLifeSeconds: soon\n", "c.yaml:1: fairShareHalfLifeSeconds"},
           {"goodput: {restartGain: -1}\n", "c.yaml:1: goodput.restartGain must be a number"},
           {"goodput: {roundSeconds: 0}\n", "goodput.roundSeconds"},
           {"goodput: {rounds: 5}\n", "unknown key goodput.rounds"}}) {
    auto bad = parse_server_config(text, "c.yaml");
    ASSERT_FALSE(bad.is_ok()) << text;
    EXPECT_NE(bad.status().message().find(what), std::string::npos) << bad.status().message();
  }
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
