// The Unix user behind a TCP connection from this machine: the owner of the peer's socket, from
// /proc/net/tcp and tcp6. TCP has no SO_PEERCRED, and on loopback a job's worker is a client
// like any other, so this is how the API can tell a worker from the operator on the same box.
#pragma once

#include <cstdint>
#include <optional>

namespace trainyard::server {

// nullopt when `connection_fd` is not a TCP connection whose peer socket is on this machine (in
// this network namespace), or /proc cannot be read.
std::optional<uint32_t> loopback_peer_uid(int connection_fd);

}  // namespace trainyard::server
