// The rules for names users choose: job names (DNS-label-like, as Kubernetes) and team names.
// One place, so the job-spec parser, API tokens and the server config accept the same names and
// every name the API accepts can be stored, read back and used in a path or a label.
#pragma once

#include <string_view>

#include "util/status.h"

namespace trainyard::model {

inline constexpr size_t kMaxNameLength = 63;

// [a-z0-9]([-a-z0-9.]*[a-z0-9])?, at most 63 characters.
bool is_job_name(std::string_view s);

// A team name: 1..63 characters, letters, digits, '-', '_' and '.', starting with a letter or
// digit. InvalidArgument naming the rule when it is not one.
util::Status check_team_name(std::string_view s);

}  // namespace trainyard::model
