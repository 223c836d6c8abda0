// The load profiles a simulated GPU can show while it runs a job, chosen per job with the label
// trainyard.dev/sim-gpu-profile. Kept in model/ so the job-spec parser can refuse unknown names
// and telemetry's synthetic sampler draws exactly these curves.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace trainyard::model {

inline constexpr std::string_view kLabelSimGpuProfile = "trainyard.dev/sim-gpu-profile";

inline constexpr std::string_view kSimProfileHealthy = "healthy";
inline constexpr std::string_view kSimProfileDataBound = "data-bound";    // input-pipeline bound
inline constexpr std::string_view kSimProfileMemoryLeak = "memory-leak";  // memory only grows
inline constexpr std::string_view kSimProfileOverheating = "overheating";
inline constexpr std::string_view kSimProfileUnderfilled = "underfilled";  // small batches
inline constexpr std::string_view kSimProfileIdle = "idle";  // holds the GPU, computes nothing
inline constexpr std::string_view kSimProfileFp32 = "fp32";  // busy, but tensor cores unused

// Every profile; `healthy` is the default when a job has no label.
inline constexpr std::array<std::string_view, 7> kSimGpuProfiles = {
    kSimProfileHealthy,     kSimProfileDataBound, kSimProfileMemoryLeak, kSimProfileOverheating,
    kSimProfileUnderfilled, kSimProfileIdle,      kSimProfileFp32};

inline bool is_sim_gpu_profile(std::string_view name) {
  return std::find(kSimGpuProfiles.begin(), kSimGpuProfiles.end(), name) != kSimGpuProfiles.end();
}

// "healthy, data-bound, ...", for error messages.
inline std::string sim_gpu_profile_list() {
  std::string out;
  for (std::string_view p : kSimGpuProfiles) (out += out.empty() ? "" : ", ") += p;
  return out;
}

}  // namespace trainyard::model
