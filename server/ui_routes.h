// The web UI's routes: GET / (index.html) and GET /ui/<asset> from the assets embedded in the
// binary (web/assets.h). They need no token: the files carry no data, and every page reads
// the API with the usual authentication (docs/web-ui.md).
#pragma once

#include "server/http_server.h"

namespace trainyard::server {

void add_ui_routes(http::Router& router);

// The reply for one embedded asset: gzip when `accept_encoding` allows it, 304 when
// `if_none_match` names its ETag, with the caching and security headers. Exposed for tests.
http::Response ui_asset_response(std::string_view name, const std::string* accept_encoding,
                                 const std::string* if_none_match);

}  // namespace trainyard::server
