// The job-manifest parts of reading YAML on top of the YAML reader (model/yaml_reader.h):
// Kubernetes label syntax, the template reader, and which rules a document is held to.
#pragma once

#include <string>

#include "model/job_manifest.h"
#include "model/labels.h"
#include "model/yaml_reader.h"
#include "util/status.h"

namespace trainyard::model::internal {

using Field = YamlField;
using Fields = YamlFields;

class ManifestReader : public YamlReader {
 public:
  ManifestReader(std::string file, const YamlLimits& limits)
      : YamlReader(std::move(file), limits) {}

  // Kubernetes label syntax for keys and values; label() checks and adds one entry of `parent`.
  util::Result<Labels> labels(const Field& f) const;
  util::Status label(const Field& parent, const Field& entry, Labels& out) const;
};

// Linux's PATH_MAX, with the NUL: a longer working or checkpoint directory cannot be used.
inline constexpr size_t kMaxPathBytes = 4096;

// Which rules a document must meet. A submission meets every current rule. A stored spec (the
// store's canonical JSON of a job accepted earlier) is held to the rules it was accepted under:
// checks added since then (team-name characters, the simulated-GPU profile, execve sizes) are
// skipped, so that a server upgrade never makes a stored job unreadable.
enum class ManifestSource { Submission, Store };

// The template part of the manifest (command, args, env, workingDir, resources).
util::Status read_template(const ManifestReader& r, ManifestSource source, const Field& tmpl,
                           JobManifest& m);

}  // namespace trainyard::model::internal
