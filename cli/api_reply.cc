#include "cli/api_reply.h"

#include <fmt/format.h>

namespace trainyard::cli {

util::Status unexpected_reply(std::string_view endpoint, const util::Status& st) {
  return util::internal_error(
      fmt::format("{}: unexpected reply: {}; the server may run another version of trainyard (see "
                  "docs/api.md)",
                  endpoint, st.message()));
}

}  // namespace trainyard::cli
