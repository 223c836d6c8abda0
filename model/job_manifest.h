// A job as a user writes it: a Kubernetes-shaped YAML (or JSON) document with the scheduler's
// request (model::JobSpec) and how to run it (command, env, checkpoint dir). The same parser
// reads files given to `trainyard submit`, API request bodies and the store's canonical JSON,
// so a spec means one thing everywhere. Errors name file:line, the field's dotted path and the
// fix; see docs/job-spec.md.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/job.h"
#include "model/labels.h"
#include "util/clock.h"
#include "util/status.h"

namespace trainyard::model {

// How a worker process is started: argv = command + args, never through a shell.
struct ProcessTemplate {
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // in the order written
  std::string working_dir;                               // empty = the server's job run dir

  bool operator==(const ProcessTemplate&) const = default;
};

struct CheckpointPolicy {
  std::string dir;                                         // empty = server picks one
  util::Duration grace_period = std::chrono::seconds(30);  // notice -> SIGKILL

  bool operator==(const CheckpointPolicy&) const = default;
};

inline constexpr int kDefaultBackoffLimit = 3;

struct JobManifest {
  // spec.name = metadata.name; spec.runtime_limit = activeDeadlineSeconds;
  // spec.allowed_gpu_models from the node selector's trainyard.dev/gpu.product (which is not
  // kept in spec.node_selector); spec.checkpoint_interval = checkpoint.intervalSeconds.
  // spec.depends_on stays empty: whoever admits the job resolves `depends_on` to ids.
  JobSpec spec;
  Labels labels;                        // metadata.labels
  std::vector<std::string> depends_on;  // job names or numeric ids, as written
  int backoff_limit = kDefaultBackoffLimit;
  // spec.array: Slurm's --array text as written ("0-99%10"), checked by parse_array_spec();
  // empty = one job. The server turns it into one job per index (model/job_array.h).
  std::string array;
  ProcessTemplate process;
  CheckpointPolicy checkpoint;

  bool operator==(const JobManifest&) const = default;
};

// Parses one `apiVersion: trainyard.dev/v1, kind: Job` document (YAML or JSON text) as a user
// or a client submits it: at most 1 MiB, every rule of docs/job-spec.md. `file` names the source
// in error messages ("job.yaml:14: ..."). What it accepts, job_manifest_to_json() can write and
// parse_stored_job_manifest() reads back to an equal manifest.
util::Result<JobManifest> parse_job_manifest(std::string_view text, std::string_view file);

// Parses a job's stored form (job_manifest_to_json() of a manifest accepted earlier), for
// recovery and anything else that reads the store. The same parser, but the text may be up to
// 16 MiB (escaping makes the JSON of a 1 MiB spec longer than 1 MiB), and rules added after a job
// could have been stored (team-name characters, the simulated-GPU profile, execve sizes) are not
// applied, so that no stored job becomes unreadable.
util::Result<JobManifest> parse_stored_job_manifest(std::string_view text, std::string_view file);

// The field a job-spec error is about, as a dotted path: "job.yaml:14: spec.workers must be ..."
// -> "spec.workers", "...: unknown field \"spec.worker\" ..." -> "spec.worker"; also for the
// server's own spec checks written "<path>: <problem>". "" for errors about the whole document
// (size, encoding, syntax, a second document) and for messages about anything else.
std::string job_spec_error_field(std::string_view message);

// `st` with "<file>:<line>: " in front when its message names a field of the spec `text` (as the
// server's checks after parsing write: "<path>: <problem>") and that field, or its nearest
// ancestor, is found in `text`; `st` unchanged otherwise (already located, or no field).
util::Status locate_spec_error(util::Status st, std::string_view text, std::string_view file);

// Canonical JSON text of `m`, in the same Kubernetes shape; parse_stored_job_manifest() (and
// parse_job_manifest(), when it is at most 1 MiB) reads it back to an equal manifest.
std::string job_manifest_to_json(const JobManifest& m);
// JSON text with the characters a YAML reader treats as line breaks or a byte-order mark (U+0085,
// U+2028, U+2029, U+FEFF) written as \u escapes, so that a YAML reader returns the same strings.
std::string escape_yaml_line_breaks(std::string json);
// What the JSON writer says of the first string of `m` that is not valid UTF-8, if any.
std::optional<std::string> first_invalid_utf8(const JobManifest& m);

// Same document as YAML, for `trainyard show -o yaml`.
std::string job_manifest_to_yaml(const JobManifest& m);

}  // namespace trainyard::model
