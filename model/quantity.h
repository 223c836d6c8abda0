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

// A plain decimal number in thousandths: digits, then optionally "." and digits ("12", "0.5",
// "1.0", "2.250", ".5"). Signs, exponents, hex, spaces, "inf" and "nan" are not plain decimals, so
// "-0", "+1", "1e0", "0x1" and " 1" are refused rather than read as numbers.
struct PlainDecimal {
  bool ok = false;        // the text is a plain decimal
  bool too_fine = false;  // it is, but has a non-zero digit after the third decimal
  int64_t milli = 0;      // the value in thousandths; kMaxPlainMilli when larger
};
inline constexpr int64_t kMaxPlainMilli = int64_t{1} << 60;
PlainDecimal parse_plain_decimal(std::string_view text);

// Parses Kubernetes-style quantities: "32Gi", "512Mi", "1G", "1024" (bytes): decimal digits and
// an optional suffix; signs and exponents are refused.
util::Result<Bytes> parse_bytes(std::string_view text);
// Parses "8", "500m", "2.5" (cores) into milli-cores: a plain decimal (see PlainDecimal) or
// digits and "m". Fractions finer than 1m are refused.
util::Result<CpuMilli> parse_cpu(std::string_view text);
std::string format_bytes(Bytes b);

}  // namespace trainyard::model
