#include <httplib.h>

#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "server/alerts_service.h"
#include "server/config.h"
#include "server/metrics.h"

namespace trainyard::server {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(AlertsConfig, DefaultsComeFromTheRulesAndEveryKeyParses) {
  auto def = parse_server_config("policy: fifo\n", "c.yaml");
  ASSERT_TRUE(def.is_ok());
  EXPECT_TRUE(def->alerts.enabled);
  EXPECT_EQ(def->alerts.rules.idle.fire_after, util::seconds(30 * 60));
  EXPECT_EQ(def->alerts.rules.temperature.threshold_c, 85);
  EXPECT_TRUE(def->alerts.webhook.url.empty());

  auto c = parse_server_config(
      "alerts:\n"
      "  keepResolved: 10\n"
      "  temperature: {temperatureC: 83, for: 2m, resolveAfter: 30s, hysteresisC: 1, "
      "slowdown: false}\n"
      "  throttling: {enabled: false}\n"
      "  ecc: {resolveAfter: 1h}\n"
      "  xid: {for: 0}\n"
      "  memoryLeak: {window: 15m, minRisePercent: 10}\n"
      "  idle: {utilPercent: 10, idleMinutes: 0.5}\n"
      "  budget: {warnPercent: 90}\n"
      "  webhook: {url: 'http://127.0.0.1:9/hook?x=1', timeoutSeconds: 0.5}\n",
      "c.yaml");
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  const auto& r = c->alerts.rules;
  EXPECT_EQ(c->alerts.keep_resolved, 10);
  EXPECT_EQ(r.temperature.threshold_c, 83);
  EXPECT_EQ(r.temperature.fire_after, util::seconds(120));
  EXPECT_EQ(r.temperature.resolve_after, util::seconds(30));
  EXPECT_FALSE(r.temperature.slowdown);
  EXPECT_FALSE(r.throttling.enabled);
  EXPECT_EQ(r.ecc.resolve_after, util::seconds(3600));
  EXPECT_EQ(r.memory_leak.window, util::seconds(15 * 60));
  EXPECT_DOUBLE_EQ(r.memory_leak.min_rise_share, 0.10);
  EXPECT_EQ(r.idle.fire_after, util::seconds(30));
  EXPECT_EQ(r.idle.util_percent, 10);
  EXPECT_DOUBLE_EQ(r.budget.warn_share, 0.90);
  EXPECT_EQ(c->alerts.webhook.url, "http://127.0.0.1:9/hook?x=1");
  EXPECT_EQ(c->alerts.webhook.timeout, std::chrono::milliseconds(500));
}

TEST(AlertsConfig, ErrorsNameTheFileLinePathAndWhatIsAllowed) {
  const std::pair<const char*, const char*> cases[] = {
      {"alerts:\n  idle: {idleFor: soon}\n",
       "c.yaml:2:19: alerts.idle.idleFor must be a duration from 0s to 7d, got \"soon\""},
      {"alerts:\n  bogus: 1\n", "c.yaml:2:3: unknown field \"alerts.bogus\" (allowed: enabled"},
      {"alerts:\n  temperature: {temperatureC: -5}\n",
       "c.yaml:2:31: alerts.temperature.temperatureC must be a number from 1 to 200, got \"-5\""},
      {"alerts:\n  webhook: {url: 'ftp://x'}\n", "alerts.webhook.url must be an http://"},
      {"alerts:\n  webhook: {url: 'http://'}\n", "alerts.webhook.url must be"},
      {"alerts:\n  budget: {for: 1m}\n", "unknown field \"alerts.budget.for\""},
      {"alerts: [1]\n", "c.yaml:1:9: alerts must be a mapping of name: value, got a list"},
      {"alerts:\n  keepResolved: 1.5\n", "alerts.keepResolved must be a whole number"},
      {"alerts:\n  memoryLeak: {window: 10ms}\n", "alerts.memoryLeak.window must be"},
      {"alerts:\n  enabled: maybe\n", "alerts.enabled must be true or false, got \"maybe\""},
      {"alerts:\n  enabled: yes\n", "alerts.enabled must be true or false, got \"yes\""},
      {"alerts:\n  idle: {idleMinutes: 5, for: 1m}\n",
       "alerts.idle.idleMinutes and alerts.idle.for set the same time; give only one"},
      {"alerts:\n  keepResolved: 0x10\n", "alerts.keepResolved must be a whole number"},
  };
  for (const auto& [text, expect] : cases) {
    auto c = parse_server_config(text, "c.yaml");
    ASSERT_FALSE(c.is_ok()) << text;
    EXPECT_EQ(c.status().code(), util::StatusCode::InvalidArgument);
    EXPECT_NE(c.status().message().find(expect), std::string::npos)
        << text << " -> " << c.status().message();
  }
}

TEST(AlertsConfig, DurationsTakeUnitsOrSeconds) {
  EXPECT_EQ(parse_duration_ms("3s"), 3000);
  EXPECT_EQ(parse_duration_ms("1.5m"), 90'000);
  EXPECT_EQ(parse_duration_ms("2h"), 7'200'000);
  EXPECT_EQ(parse_duration_ms("250ms"), 250);
  EXPECT_EQ(parse_duration_ms("1d"), 86'400'000);
  EXPECT_EQ(parse_duration_ms("42"), 42'000);
  EXPECT_EQ(parse_duration_ms("0.5"), 500);
  for (const char* bad : {"", "s", "m", "-1s", "1x", "1e9999", ".", "1..2s", "5 m", "nan"})
    EXPECT_FALSE(parse_duration_ms(bad).has_value()) << bad;
}

AttributedSample idle_sample(int64_t now_ms, double util) {
  AttributedSample a;
  a.sample.time = util::from_millis(now_ms);
  a.sample.uuid = "GPU-sim-0";
  a.sample.model = "H100-80GB";
  a.sample.gpu_util_percent = util;
  a.sample.memory_used_bytes = 10 * kGiB;
  a.sample.memory_total_bytes = 80 * kGiB;
  a.jobs = {JobRef{.id = 4, .name = "sleepy", .team = "vision"}};
  return a;
}

TEST(AlertService, FiresIntoTheSinkListsAndCountsThenKeepsABoundedResolvedList) {
  AlertsConfig config;
  config.rules.idle.fire_after = util::seconds(2);
  config.rules.idle.resolve_after = util::Duration(0);
  config.keep_resolved = 2;
  std::vector<telemetry::AlertTransition> seen;
  AlertService service(config, [&](const auto& t) { seen.insert(seen.end(), t.begin(), t.end()); });
  int64_t now = 1'000'000;
  for (int episode = 0; episode < 3; ++episode) {
    for (int i = 0; i <= 3; ++i, now += 1000)
      service.on_round(util::from_millis(now), {idle_sample(now, 0)});
    EXPECT_EQ(service.alerts(false).size(), 1u);
    EXPECT_EQ(service.firing_counts().at({"job-gpu-idle", "warning"}), 1);
    service.on_round(util::from_millis(now), {idle_sample(now, 90)});
    now += 1000;
    EXPECT_TRUE(service.alerts(false).empty());
  }
  ASSERT_EQ(seen.size(), 6u);  // three firings, three resolutions, no duplicates
  EXPECT_TRUE(seen[0].alert.firing());
  EXPECT_EQ(seen[0].alert.subject.jobs.at(0).id, 4);
  EXPECT_FALSE(seen[1].alert.firing());
  const auto all = service.alerts(true);
  ASSERT_EQ(all.size(), 2u);        // bounded by keepResolved
  EXPECT_GT(all[0].id, all[1].id);  // newest first
  EXPECT_EQ(service.firing_counts().at({"job-gpu-idle", "warning"}), 0);
  EXPECT_EQ(service.firing_counts().count({"gpu-xid", "critical"}), 1u);  // zeros are listed

  ClusterCounts counts;
  counts.alerts_firing = service.firing_counts();
  ExpositionWriter w;
  write_server_metrics(w, counts, ServerMetrics{});
  EXPECT_NE(w.text().find("# TYPE trainyard_alerts_firing gauge"), std::string::npos);
  EXPECT_NE(w.text().find("trainyard_alerts_firing{rule=\"job-gpu-idle\",severity=\"warning\"} 0"),
            std::string::npos);
}

TEST(AlertService, WebhookGetsAnAlertmanagerShapedPostPerTransition) {
  httplib::Server receiver;
  std::mutex mu;
  std::vector<nlohmann::json> bodies;
  receiver.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    bodies.push_back(nlohmann::json::parse(req.body));
    res.status = 200;
  });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  std::thread serve([&] { receiver.listen_after_bind(); });

  AlertsConfig config;
  config.rules.idle.fire_after = util::Duration(0);
  config.rules.idle.resolve_after = util::Duration(0);
  config.webhook.url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  {
    AlertService service(config, nullptr);
    service.on_round(util::from_millis(1000), {idle_sample(1000, 0)});
    service.on_round(util::from_millis(2000), {idle_sample(2000, 50)});
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lock(mu);
        if (bodies.size() >= 2) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  receiver.stop();
  serve.join();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0]["version"], "4");
  EXPECT_EQ(bodies[0]["status"], "firing");
  EXPECT_EQ(bodies[0]["alerts"][0]["labels"]["alertname"], "job-gpu-idle");
  EXPECT_EQ(bodies[0]["alerts"][0]["labels"]["hpc_job"], "4");
  EXPECT_EQ(bodies[0]["alerts"][0]["endsAt"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(bodies[0]["alert"]["state"], "firing");
  EXPECT_EQ(bodies[1]["status"], "resolved");
  EXPECT_EQ(bodies[1]["alert"]["resolvedAt"], "1970-01-01T00:00:02.000Z");
}

TEST(AlertService, UnreachableWebhookNeverBlocksARound) {
  AlertsConfig config;
  config.rules.idle.fire_after = util::Duration(0);
  config.rules.idle.resolve_after = util::Duration(0);
  config.webhook.url = "http://10.255.255.1:9/hook";  // unroutable: connects time out
  config.webhook.timeout = std::chrono::seconds(1);
  AlertService service(config, nullptr);
  const auto start = util::WallClock::steady_now();
  for (int i = 0; i < 50; ++i)
    service.on_round(util::from_millis(1000 * (i + 1)),
                     {idle_sample(1000 * (i + 1), i % 2 == 0 ? 0 : 90)});
  // 50 transitions against a 1 s timeout each: the rounds must not have waited for them.
  EXPECT_LT(util::WallClock::steady_now() - start, std::chrono::milliseconds(500));
  EXPECT_EQ(service.alerts(true).size(), 25u);
}

}  // namespace
}  // namespace trainyard::server
