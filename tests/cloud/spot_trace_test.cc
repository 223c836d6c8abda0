// Spot traces: SkyPilot and Bamboo readers on small inline traces and the shared files, and
// simcloud replaying them (capacity gaps, reclaims after ready, notices, looping).
#include "cloud/spot_trace.h"

#include <gtest/gtest.h>

#include <string>

#include "cloud/simcloud.h"

namespace trainyard::cloud {
namespace {

using util::kEpoch;
using util::seconds;

const std::string kShared = TY_SHARED_DIR;
const std::string kPreemption =
    kShared + "/traces/spot/skypilot-spot-traces/preemption/1-node/aws-04-22-2023";

TEST(SpotTrace, SkyPilotCountsBecomeStepsAndReclaims) {
  auto t = parse_skypilot_trace(
      R"({"metadata": {"gap_seconds": 10}, "data": [0, 1, 1, 0, 1, 2, 0]})", "x.json");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->period, seconds(70));
  std::vector<CapacityStep> steps = {{seconds(0), 0},  {seconds(10), 1}, {seconds(30), 0},
                                     {seconds(40), 1}, {seconds(50), 2}, {seconds(60), 0}};
  EXPECT_EQ(t->capacity, steps);
  std::vector<Reclaim> reclaims = {{seconds(30), 1, true}, {seconds(60), 2, true}};
  EXPECT_EQ(t->reclaims, reclaims);
  EXPECT_EQ(t->capacity_at(seconds(15)), 1);
  EXPECT_EQ(t->capacity_at(seconds(55)), 2);
  EXPECT_EQ(t->capacity_at(seconds(75)), 0);  // loops: 75 s is 5 s into the second pass
  EXPECT_EQ(t->capacity_at(seconds(85)), 1);
}

TEST(SpotTrace, SkyPilotErrorsNameTheFileAndPosition) {
  auto bad_json = parse_skypilot_trace("{\"metadata\": ", "a.json");
  ASSERT_FALSE(bad_json.is_ok());
  EXPECT_NE(bad_json.status().message().find("a.json"), std::string::npos);
  auto negative =
      parse_skypilot_trace(R"({"metadata": {"gap_seconds": 5}, "data": [1, 1, -1]})", "b.json");
  ASSERT_FALSE(negative.is_ok());
  EXPECT_NE(negative.status().message().find("b.json: data[2]"), std::string::npos)
      << negative.status().message();
  auto no_gap = parse_skypilot_trace(R"({"metadata": {}, "data": [1]})", "c.json");
  ASSERT_FALSE(no_gap.is_ok());
  EXPECT_NE(no_gap.status().message().find("gap_seconds"), std::string::npos);
  EXPECT_FALSE(
      parse_skypilot_trace(R"({"metadata": {"gap_seconds": 5}, "data": []})", "d").is_ok());
}

TEST(SpotTrace, BambooRemovesAreReclaimsOfOneNodeEach) {
  auto t = parse_bamboo_trace(
      "time_ms,event,node\n0,add,a\n0,add,b\n0,add,c\n60000,remove,a\n60000,remove,b\n"
      "120000,add,d\r\n180000,remove,c\n",
      "p.csv");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->period, seconds(240));  // last event + the one-minute grid
  std::vector<CapacityStep> steps = {
      {seconds(0), 3}, {seconds(60), 1}, {seconds(120), 2}, {seconds(180), 1}};
  EXPECT_EQ(t->capacity, steps);
  std::vector<Reclaim> reclaims = {{seconds(60), 2, false}, {seconds(180), 1, false}};
  EXPECT_EQ(t->reclaims, reclaims);
}

TEST(SpotTrace, BambooErrorsNameTheLine) {
  auto unknown = parse_bamboo_trace("0,add,a\n10,remove,b\n", "q.csv");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("q.csv:2"), std::string::npos);
  auto back = parse_bamboo_trace("10,add,a\n5,add,b\n", "q.csv");
  ASSERT_FALSE(back.is_ok());
  EXPECT_NE(back.status().message().find("q.csv:2"), std::string::npos);
  auto event = parse_bamboo_trace("0,boot,a\n", "q.csv");
  ASSERT_FALSE(event.is_ok());
  EXPECT_NE(event.status().message().find("q.csv:1: event 'boot'"), std::string::npos);
  EXPECT_FALSE(parse_bamboo_trace("", "q.csv").is_ok());
}

// tests/data/bamboo-gcp-sample.txt is hand-written in the shape of Bamboo's GCP traces
// (github.com/uclasystem/bamboo, traces/gcloud/*.txt): "YYYY-MM-DD, HH:MM:SS, count" rows,
// here two minutes apart across midnight.
TEST(SpotTrace, BambooGcpCountsBecomeStepsAndReclaims) {
  auto t = load_spot_trace(std::string(TY_SOURCE_DIR) + "/tests/data/bamboo-gcp-sample.txt");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->period, seconds(1200));  // last row at 1080 s + the two-minute gap
  std::vector<CapacityStep> steps = {{seconds(0), 4},   {seconds(240), 3}, {seconds(480), 0},
                                     {seconds(720), 2}, {seconds(840), 5}, {seconds(1080), 1}};
  EXPECT_EQ(t->capacity, steps);
  std::vector<Reclaim> reclaims = {
      {seconds(240), 1, false}, {seconds(480), 3, true}, {seconds(1080), 4, false}};
  EXPECT_EQ(t->reclaims, reclaims);
}

TEST(SpotTrace, BambooGcpTakesAHeaderAndCommasWithoutSpaces) {
  auto t = parse_spot_trace(
      "date, time, count\n2021-12-31,23:59:30,5\n2022-01-01, 00:00:30, 5\n"
      "2022-01-01, 00:00:30, 2\n2022-01-01,00:01:00,3\n",
      "g.txt");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->period, seconds(120));
  std::vector<CapacityStep> steps = {{seconds(0), 5}, {seconds(60), 2}, {seconds(90), 3}};
  EXPECT_EQ(t->capacity, steps);
  std::vector<Reclaim> reclaims = {{seconds(60), 3, false}};
  EXPECT_EQ(t->reclaims, reclaims);
}

TEST(SpotTrace, BambooGcpErrorsNameTheLineAndTheShape) {
  auto expect_error = [](std::string_view text, std::string_view want) {
    auto t = parse_bamboo_gcp_trace(text, "g.txt");
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().message();
  };
  expect_error("2021-12-11, 11:11:30, 5\n2021-12-11, 11:12:30\n",
               "g.txt:2: expected 3 fields YYYY-MM-DD, HH:MM:SS, count");
  expect_error("2021-02-30, 11:11:30, 5\n", "g.txt:1: '2021-02-30, 11:11:30' must be a date");
  expect_error("2021-12-11, 24:00:00, 5\n", "g.txt:1:");
  expect_error("2021-12-11, 11:11, 5\n", "g.txt:1:");
  expect_error("2021-12-11, 11:11:30:, 5\n", "g.txt:1:");
  expect_error("\n2021-12-11, 11:11:30, -2\n", "g.txt:2: count '-2' must be an integer");
  expect_error("2021-12-11, 11:11:30, 5\n2021-12-11, 11:11:29, 5\n",
               "g.txt:2: 2021-12-11, 11:11:29 is before the previous row's");
  expect_error("2021-12-11, 11:11:30, 5\n2400-12-11, 11:11:30, 5\n", "g.txt:2: more than");
  expect_error("date,time,count\n", "g.txt: no rows");
}

TEST(SpotTrace, BambooSeriesInDecimalHoursBecomeStepsAndReclaims) {
  auto t = parse_spot_trace("0.000,0\n0.030,0\n0.030,9\n0.059,9\n0.059,7\n0.100,7\n", "s.csv");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  // 0.030 h = 108 s, 0.059 h = 212.4 s, 0.100 h = 360 s; the smallest gap is 0.029 h.
  const util::Duration ms = std::chrono::milliseconds(1);
  std::vector<CapacityStep> steps = {{seconds(0), 0}, {seconds(108), 9}, {212'400 * ms, 7}};
  EXPECT_EQ(t->capacity, steps);
  std::vector<Reclaim> reclaims = {{212'400 * ms, 2, false}};
  EXPECT_EQ(t->reclaims, reclaims);
  EXPECT_EQ(t->period, seconds(360) + 104'400 * ms);
}

TEST(SpotTrace, BambooSeriesInWholeNumbersAreSecondsUnlessTheHeaderSaysHours) {
  auto secs = parse_spot_trace("0,3\n100,3\n100,0\n", "s.csv");
  ASSERT_TRUE(secs.is_ok()) << secs.status().to_string();
  std::vector<Reclaim> at_100s = {{seconds(100), 3, true}};
  EXPECT_EQ(secs->reclaims, at_100s);
  EXPECT_EQ(secs->period, seconds(200));
  auto hours = parse_spot_trace("Hours,count\n0,3\n1,3\n1,0\n", "s.csv");
  ASSERT_TRUE(hours.is_ok()) << hours.status().to_string();
  std::vector<Reclaim> at_1h = {{seconds(3600), 3, true}};
  EXPECT_EQ(hours->reclaims, at_1h);
  auto one = parse_spot_trace("0.000,8\n", "s.csv");  // one row: constant capacity
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  EXPECT_EQ(one->capacity_at(seconds(1000)), 8);
  EXPECT_TRUE(one->reclaims.empty());
}

TEST(SpotTrace, BambooSeriesErrorsNameTheLineAndTheShape) {
  auto expect_error = [](std::string_view text, std::string_view want) {
    auto t = parse_bamboo_series_trace(text, "s.csv");
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().message();
  };
  expect_error("0.0,1\n0.5\n", "s.csv:2: expected 2 fields hours,count");
  expect_error("0.0,1\n0.5,x\n", "s.csv:2: count 'x' must be an integer from 0 to");
  expect_error("0.0,1\n1.5e3,2\n", "s.csv:2: time '1.5e3' must be a non-negative decimal");
  expect_error("-1,2\n", "s.csv:1: time '-1' must be a non-negative whole number of seconds");
  expect_error("0.0,1\n0.0000000001,2\n", "s.csv:2: time");  // more than 9 decimals
  expect_error("0.0,1\n99999999.0,2\n", "s.csv:2: time");    // past a century
  expect_error("0.5,1\n0.25,2\n", "s.csv:2: time 0.25 hours is before the previous row's");
  expect_error("hours,count\n", "s.csv: no rows");
}

TEST(SpotTrace, FormatIsToldFromTheContent) {
  auto events = parse_spot_trace("0,add,a\n60000,remove,a\n", "x");
  ASSERT_TRUE(events.is_ok()) << events.status().to_string();
  EXPECT_EQ(events->reclaims.size(), 1u);
  auto json = parse_spot_trace(R"(  {"metadata": {"gap_seconds": 10}, "data": [1, 0]})", "x");
  ASSERT_TRUE(json.is_ok()) << json.status().to_string();
  EXPECT_EQ(json->period, seconds(20));
  auto unknown = parse_spot_trace("\n1,2,3,4\n", "u.dat");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("u.dat:2: cannot tell the spot trace format"),
            std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("hours,count"), std::string::npos);
  EXPECT_FALSE(parse_spot_trace("", "e").is_ok());
  EXPECT_FALSE(parse_spot_trace("\"unterminated,1\n", "q").is_ok());
}

TEST(SpotTrace, BambooDocDataFilesLoadInHoursAndSeconds) {
  const std::string dir = kShared + "/traces/spot/bamboo/doc-data/";
  auto p2 = load_spot_trace(dir + "aws-spot-instances-p2-xlarge-2020-11-20-to-2020-11-23.csv");
  ASSERT_TRUE(p2.is_ok()) << p2.status().to_string();
  EXPECT_GT(p2->period, seconds(88 * 3600));  // the series ends at 88.695 h
  EXPECT_LT(p2->period, seconds(89 * 3600));
  EXPECT_EQ(p2->capacity_at(seconds(60)), 0);  // 9 from 0.030 h = 108 s on
  EXPECT_EQ(p2->capacity_at(seconds(120)), 9);
  const std::string g4dn = dir + "aws-spot-instances-g4dn-xlarge-us-east-1c-2020-11-20-1930-to-";
  auto in_s = load_spot_trace(g4dn + "2020-11-21-2200.csv");
  auto in_h = load_spot_trace(g4dn + "2020-11-21-2200_scaled.csv");
  ASSERT_TRUE(in_s.is_ok()) << in_s.status().to_string();
  ASSERT_TRUE(in_h.is_ok()) << in_h.status().to_string();
  ASSERT_EQ(in_s->reclaims.size(), in_h->reclaims.size());
  ASSERT_FALSE(in_s->reclaims.empty());
  for (size_t i = 0; i < in_s->reclaims.size(); ++i) {
    EXPECT_EQ(in_s->reclaims[i].nodes, in_h->reclaims[i].nodes);
    // The _scaled file rounds to 0.001 h = 3.6 s.
    EXPECT_LE(std::chrono::abs(in_s->reclaims[i].offset - in_h->reclaims[i].offset),
              std::chrono::milliseconds(1800));
  }
}

TEST(SpotTrace, RealFilesLoad) {
  auto one = load_spot_trace(kPreemption + "/us-west-2b_v100_1.json");
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  EXPECT_EQ(one->period, seconds(19961 * 32));
  EXPECT_EQ(one->reclaims.size(), 44u);  // 1 → 0 drops in the file
  for (const Reclaim& r : one->reclaims) EXPECT_TRUE(r.to_zero && r.nodes == 1);
  auto zones = load_skypilot_zone_traces(kPreemption);
  ASSERT_TRUE(zones.is_ok()) << zones.status().to_string();
  EXPECT_EQ(zones->size(), 4u);
  EXPECT_TRUE(zones->contains("us-east-1f"));
  auto p3 = load_spot_trace(kShared + "/traces/spot/bamboo/p3-trace.csv");
  ASSERT_TRUE(p3.is_ok()) << p3.status().to_string();
  int removed = 0;
  for (const Reclaim& r : p3->reclaims) removed += r.nodes;
  EXPECT_EQ(removed, 167);
  EXPECT_FALSE(load_spot_trace(kShared + "/nope.json").is_ok());
}

Offering spot_offering(std::string provider, std::string zone) {
  return Offering{.provider = std::move(provider),
                  .instance_type = "p3.2xlarge",
                  .region = "us-west-2",
                  .zone = std::move(zone),
                  .accelerator = "V100",
                  .gpus_per_node = 1,
                  .on_demand_per_hour = 3.06,
                  .spot_per_hour = 0.918};
}

// gap 60 s: capacity 1 for 5 min, none for 2 min, 1 again; the pass is 10 min.
SpotTrace ten_minute_trace() {
  return parse_skypilot_trace(
             R"({"metadata": {"gap_seconds": 60}, "data": [1, 1, 1, 1, 1, 0, 0, 1, 1, 1]})", "t")
      .value();
}

std::vector<ProviderEvent> events_of(Provider& p, RequestId id) {
  std::vector<ProviderEvent> out;
  for (auto& e : p.poll(util::Time::min())) {
    if (e.request == id) out.push_back(e);
  }
  return out;
}

TEST(SimCloudReplay, NodeIsReclaimedAtTheTracesNextDropAndTheTraceLoops) {
  util::VirtualClock clock;
  SimCloudOptions opts;
  opts.replay = SpotReplay{.by_zone = {{"usw2-az1", ten_minute_trace()}}};
  auto cloud = make_simcloud({spot_offering("aws", "usw2-az1")}, {}, opts, clock);
  auto first = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  ASSERT_TRUE(first.is_ok());
  // Ready at 90 s; the drop at 300 s reclaims it with AWS's 120 s notice.
  EXPECT_EQ(cloud->next_event_time(), kEpoch + seconds(90));
  clock.advance_to(kEpoch + seconds(10000));
  auto ev = events_of(*cloud, *first);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, ProviderEventKind::NodeReady);
  EXPECT_EQ(ev[1].kind, ProviderEventKind::InterruptionNotice);
  EXPECT_EQ(ev[1].time, kEpoch + seconds(180));
  EXPECT_EQ(ev[1].deadline, kEpoch + seconds(300));
  EXPECT_EQ(ev[2].time, kEpoch + seconds(300));
  EXPECT_EQ(cloud->next_event_time(), std::nullopt);
}

TEST(SimCloudReplay, LoopsAndFailsWithoutCapacity) {
  util::VirtualClock clock;
  SimCloudOptions opts;
  opts.replay = SpotReplay{.every_offering = ten_minute_trace()};
  auto cloud = make_simcloud({spot_offering("aws", "any")}, {}, opts, clock);
  clock.advance_to(kEpoch + seconds(250));  // ready at 340 s, after the drop at 300 s
  auto during = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  clock.advance_to(kEpoch + seconds(330));  // capacity 0 now
  auto none = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  clock.advance_to(kEpoch + seconds(930));  // the second pass (10 min): capacity 0 again
  auto none2 = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  clock.advance_to(kEpoch + seconds(1400));  // ready 1490 s; next drop 1500 s
  auto late = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  clock.advance_to(kEpoch + seconds(100000));
  auto d = events_of(*cloud, *during);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, ProviderEventKind::RequestFailed);
  EXPECT_EQ(d[0].time, kEpoch + seconds(300));
  for (RequestId id : {*none, *none2}) {
    auto n = events_of(*cloud, id);
    ASSERT_EQ(n.size(), 1u);
    EXPECT_EQ(n[0].kind, ProviderEventKind::RequestFailed);
    EXPECT_EQ(n[0].reason.rfind("no spot capacity", 0), 0u) << n[0].reason;
  }
  // The lead does not fit between ready (1490 s) and the reclaim: notice comes with it.
  auto l = events_of(*cloud, *late);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[1].kind, ProviderEventKind::InterruptionNotice);
  EXPECT_EQ(l[1].time, kEpoch + seconds(1500));
  EXPECT_EQ(l[2].time, kEpoch + seconds(1500));
}

TEST(SimCloudReplay, BambooReclaimsTakeOneNodeEachAndAreFreedOnRelease) {
  util::VirtualClock clock;
  SimCloudOptions opts;
  opts.default_provisioning_delay = seconds(0);
  SpotTrace t{.source = "hand",
              .period = seconds(1000),
              .capacity = {{seconds(0), 5}},
              .reclaims = {{seconds(100), 1, false}, {seconds(200), 1, false}}};
  opts.replay = SpotReplay{.every_offering = t};
  auto cloud = make_simcloud({spot_offering("gcp", "z")}, {}, opts, clock);
  auto a = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  auto b = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  clock.advance_to(kEpoch + seconds(50));
  ASSERT_TRUE(cloud->release_node(*a).is_ok());
  auto c = cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot});
  clock.advance_to(kEpoch + seconds(5000));
  EXPECT_EQ(events_of(*cloud, *b).back().time, kEpoch + seconds(200));
  EXPECT_EQ(events_of(*cloud, *c).back().time, kEpoch + seconds(100));  // a's freed reclaim
  EXPECT_EQ(events_of(*cloud, *c)[1].time, kEpoch + seconds(70));       // GCP's 30 s notice
}

TEST(SimCloud, InterruptionRateOverrideIsExactAndSeededRunsRepeat) {
  SimCloudOptions opts;
  opts.interruption_rate_per_hour = 0.25;
  opts.interruption_rate_scale = 7;
  EXPECT_EQ(simcloud_interruption_rate(spot_offering("aws", "z"), {}, opts), 0.25);
  auto run = [](uint64_t seed) {
    util::VirtualClock clock;
    SimCloudOptions o;
    o.seed = seed;
    o.interruption_rate_per_hour = 0.5;
    auto cloud = make_simcloud({spot_offering("aws", "z")}, {}, o, clock);
    for (int i = 0; i < 10; ++i) {
      EXPECT_TRUE(cloud->request_node({.offering = 0, .purchase = PurchaseOption::Spot}).is_ok());
    }
    clock.advance_to(kEpoch + seconds(1'000'000));
    return cloud->poll(util::Time::min());
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(Provider, NextEventTime) {
  auto fixed = make_static_provider({spot_offering("onprem", "z")});
  EXPECT_EQ(fixed->next_event_time(), std::nullopt);
  util::VirtualClock clock;
  auto cloud = make_simcloud({spot_offering("aws", "z")}, {}, {}, clock);
  EXPECT_EQ(cloud->next_event_time(), std::nullopt);
  ASSERT_TRUE(cloud->request_node({.offering = 0}).is_ok());
  EXPECT_EQ(cloud->next_event_time(), kEpoch + seconds(90));
  clock.advance_to(kEpoch + seconds(90));
  EXPECT_EQ(cloud->next_event_time(), std::nullopt);
}

}  // namespace
}  // namespace trainyard::cloud
