// Resource quantities as integer strong types. Floating point never decides whether a
// request fits: GPUs are counted in milli-GPUs, CPU in milli-cores, memory in bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"
#include "util/strong_int.h"

namespace trainyard::model {

using GpuCount = util::StrongInt<struct GpuCountTag, int64_t>;
using GpuMilli = util::StrongInt<struct GpuMilliTag, int64_t>;
using CpuMilli = util::StrongInt<struct CpuMilliTag, int64_t>;
using Bytes = util::StrongInt<struct BytesTag, int64_t>;

inline constexpr int64_t kMilliPerGpu = 1000;
constexpr GpuMilli to_milli(GpuCount g) {
  return GpuMilli(g.value() * kMilliPerGpu);
}
constexpr Bytes gib(int64_t n) {
  return Bytes(n << 30);
}
constexpr Bytes mib(int64_t n) {
  return Bytes(n << 20);
}

// Parses Kubernetes-style quantities: "32Gi", "512Mi", "1G", "1024" (bytes).
util::Result<Bytes> parse_bytes(std::string_view text);
// Parses "8", "500m", "2.5" (cores) into milli-cores. Fractions finer than 1m are refused.
util::Result<CpuMilli> parse_cpu(std::string_view text);
std::string format_bytes(Bytes b);

}  // namespace trainyard::model
