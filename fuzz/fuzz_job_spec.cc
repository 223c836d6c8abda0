// Feeds arbitrary bytes to the job-manifest parser. It must return a manifest or a Status for
// any input; an accepted manifest must survive the JSON and YAML writers unchanged (parse ->
// write -> parse gives an equal manifest, and the JSON is a fixed point). The written forms are
// read back as the server reads its store (parse_stored_job_manifest). Anything else aborts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/job_manifest.h"
#include "util/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace trainyard;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = model::parse_job_manifest(text, "fuzz.yaml");
  if (!manifest.is_ok()) return 0;
  const std::string json = model::job_manifest_to_json(*manifest);
  auto from_json = model::parse_stored_job_manifest(json, "fuzz.json");
  TY_CHECK_MSG(from_json.is_ok(), from_json.status().message() + "\n" + json);
  TY_CHECK_MSG(*from_json == *manifest, json);
  TY_CHECK(model::job_manifest_to_json(*from_json) == json);
  const std::string yaml = model::job_manifest_to_yaml(*manifest);
  auto from_yaml = model::parse_stored_job_manifest(yaml, "fuzz-out.yaml");
  TY_CHECK_MSG(from_yaml.is_ok(), from_yaml.status().message() + "\n" + yaml);
  TY_CHECK_MSG(*from_yaml == *manifest, yaml);
  return 0;
}
