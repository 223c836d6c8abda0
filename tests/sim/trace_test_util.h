// Helpers for the trace adapter tests: the bundled traces' paths and small malformed inputs
// written to temporary files, so adapters are tested through their public file entry points.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace trainyard::sim::testing {

inline std::string shared_trace(const std::string& relative) {
  return std::string(TY_SHARED_DIR) + "/traces/" + relative;
}

// Writes `text` to a file in the temporary directory and returns its path. The name is
// prefixed with the running test's name, as ctest may run tests in parallel.
inline std::string write_temp(const std::string& file_name, const std::string& text) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string prefix =
      info ? std::string(info->test_suite_name()) + "." + info->name() + "." : std::string();
  const std::string path = ::testing::TempDir() + "/" + prefix + file_name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return path;
}

// EXPECT_TRUE(contains(status.message(), "file.csv:3:2: column 'duration'")).
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

}  // namespace trainyard::sim::testing
