// simcloud: a simulated cloud behind the Provider interface. Nodes become ready after a
// per-provider provisioning delay; spot capacity per offering can run out; spot nodes are
// reclaimed by a seeded Poisson process whose rate comes from the AWS Spot Advisor bucket,
// after a per-provider notice. Deterministic: same seed and same calls, same events.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cloud/provider.h"
#include "cloud/spot_advisor.h"

namespace trainyard::cloud {

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
};

// Spot interruptions per node-hour simcloud uses for an offering.
double simcloud_interruption_rate(const Offering& offering, const SpotAdvisor& advisor,
                                  const SimCloudOptions& options);

ProviderPtr make_simcloud(std::vector<Offering> offerings, SpotAdvisor advisor,
                          SimCloudOptions options, const util::Clock& clock);

}  // namespace trainyard::cloud
