// simcloud: a simulated cloud behind the Provider interface. Nodes become ready after a
// per-provider provisioning delay; spot capacity per offering can run out; spot nodes are
// reclaimed by a seeded Poisson process whose rate comes from the AWS Spot Advisor bucket,
// after a per-provider notice, or at the reclaims of a replayed spot trace (spot_trace.h).
// Deterministic: same seed and same calls, same events.
//
// Zones: NodeRequest::offering picks one catalog row, and the catalog has one row per
// (instance type, zone), so a request chooses its zone. Each offering is its own stream: its
// own spot capacity count (spot_capacity), its own interruption draws (keyed by request), and
// its own claims on a replayed trace's reclaims, even where two offerings share a zone's trace.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cloud/provider.h"
#include "cloud/spot_advisor.h"
#include "cloud/spot_trace.h"

namespace trainyard::cloud {

// Spot traces to replay instead of the Poisson process. Trace offset 0 is `start`.
// - A spot request while its offering's trace shows 0 capacity fails at once (RequestFailed,
//   reason "no spot capacity: ..."), and so does one whose trace falls to 0 while it provisions
//   (at that time).
// - A ready spot node is reclaimed at the first reclaim of the trace after it became ready
//   (loops past the trace's end): a fall to 0 takes every node of the offering; a smaller fall
//   of n takes n nodes, each reclaim given to nodes in request order and not used twice. The
//   notice comes the provider's notice_lead before, or at the reclaim if the node was not ready
//   that early.
// - Replay ignores the seed: the same calls give the same events.
struct SpotReplay {
  // By Offering::zone (the region where the zone is empty). AWS catalog rows name zone IDs
  // ("use1-az1") while SkyPilot's files name zones ("us-east-1c"): the caller maps one to the
  // other (load_skypilot_zone_traces keys by the file's zone name).
  std::map<std::string, SpotTrace> by_zone;
  // For offerings whose zone is not in by_zone; nullopt: those keep the Poisson process.
  std::optional<SpotTrace> every_offering;
  // Time of trace offset 0; nullopt: the clock's now when the simcloud is made.
  std::optional<util::Time> start;
};

struct SimCloudOptions {
  uint64_t seed = 1;
  // Request → NodeReady. Bamboo's simulator assumes 45 s to create an instance; 90 s adds
  // image pull and boot. Per provider name; others use the default.
  util::Duration default_provisioning_delay = util::seconds(90);
  std::map<std::string, util::Duration> provisioning_delay;
  // Spot nodes that can be up at once per offering; a request beyond it fails.
  int default_spot_capacity = 16;
  std::map<size_t, int> spot_capacity;  // by offering index
  // Interruption notice lead per provider (AWS 120 s; GCP and Azure Spot 30 s); others 0.
  std::map<std::string, util::Duration> notice_lead = {
      {"aws", util::seconds(120)}, {"gcp", util::seconds(30)}, {"azure", util::seconds(30)}};
  // Bucket for offerings the advisor does not list (all non-AWS ones): 1 ("5-10%"), the
  // feed's global rate "<10%".
  int default_interruption_bucket = 1;
  // Multiplies every rate. Advisor buckets are monthly and far below what spot traces show
  // per hour (0.31-0.74/h for 1-GPU V100), so scenarios scale them up.
  double interruption_rate_scale = 1.0;
  // Interruptions per node-hour for every spot offering, replacing the advisor-derived rate
  // and interruption_rate_scale (sensitivity sweeps set it exactly, e.g. 0.01 to 0.5).
  std::optional<double> interruption_rate_per_hour;
  // Replayed spot traces; nullopt: every spot node follows the Poisson process.
  std::optional<SpotReplay> replay;
};

// Spot interruptions per node-hour simcloud uses for an offering.
double simcloud_interruption_rate(const Offering& offering, const SpotAdvisor& advisor,
                                  const SimCloudOptions& options);

ProviderPtr make_simcloud(std::vector<Offering> offerings, SpotAdvisor advisor,
                          SimCloudOptions options, const util::Clock& clock);

}  // namespace trainyard::cloud
