// Slurm's --array syntax: ranges, lists, steps and the %N limit, the errors for what is not
// one, and the spec field that carries it (parsed, checked against the name, stored and read
// back).
#include "model/job_array.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/job_manifest.h"

namespace trainyard::model {
namespace {

std::vector<int> indices(const std::string& text) {
  auto r = parse_array_spec(text);
  EXPECT_TRUE(r.is_ok()) << text << ": " << r.status().to_string();
  return r.is_ok() ? r->indices : std::vector<int>{};
}

std::string error_of(const std::string& text) {
  auto r = parse_array_spec(text);
  EXPECT_FALSE(r.is_ok()) << text << " was accepted";
  return r.is_ok() ? "" : r.status().message();
}

TEST(ArraySpec, ReadsRangesListsAndSteps) {
  EXPECT_EQ(indices("0-3"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(indices("1,3,5"), (std::vector<int>{1, 3, 5}));
  EXPECT_EQ(indices("0-15:4"), (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(indices("7"), (std::vector<int>{7}));
  EXPECT_EQ(indices("5,0-2,9-13:2"), (std::vector<int>{0, 1, 2, 5, 9, 11, 13}));
}

TEST(ArraySpec, OverlapsCountOnce) {
  EXPECT_EQ(indices("0-3,2-5,3"), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(ArraySpec, PercentSetsTheLimitOfRunningTasks) {
  auto r = parse_array_spec("0-99%10");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->indices.size(), 100u);
  EXPECT_EQ(r->limit, 10);
  EXPECT_EQ(parse_array_spec("1,2")->limit, 0);
}

TEST(ArraySpec, ErrorsNameTheBadPartAndTheFix) {
  EXPECT_NE(error_of("5-2").find("ends before it starts; write the smaller index first (2-5)"),
            std::string::npos);
  EXPECT_NE(error_of("").find("an empty array"), std::string::npos);
  EXPECT_NE(error_of("1,,2").find("an empty item between commas"), std::string::npos);
  EXPECT_NE(error_of("a-3").find("\"a\" is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("-3").find("is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("0-9%0").find("%0 would never run a task"), std::string::npos);
  EXPECT_NE(error_of("0-9%x").find("the limit after %"), std::string::npos);
  EXPECT_NE(error_of("0-9:0").find("a step must be at least 1"), std::string::npos);
  EXPECT_NE(error_of("4:2").find("a step needs a range"), std::string::npos);
  EXPECT_NE(error_of("0-1000000").find("above the largest allowed, 999999"), std::string::npos);
  EXPECT_NE(error_of("0-1,0x10").find("is not a whole number"), std::string::npos);
}

TEST(ArraySpec, RefusesMoreThanTheMaximumNumberOfTasks) {
  EXPECT_EQ(indices("0-9999").size(), static_cast<size_t>(kMaxArrayTasks));
  EXPECT_NE(error_of("0-10000").find("too many tasks: at most 10000"), std::string::npos);
  EXPECT_NE(error_of("0-9999,20000").find("too many tasks"), std::string::npos);
  EXPECT_EQ(indices("0-99999:10").size(), 10000u);
}

TEST(ArraySpec, TaskNamesAddTheIndex) {
  EXPECT_EQ(array_task_name("sweep", 7), "sweep-7");
  EXPECT_EQ(array_name_suffix_length(*parse_array_spec("0-99")), 3u);
}

const char* kSpec =
    "apiVersion: trainyard.dev/v1\nkind: Job\nmetadata: {name: %s}\nspec:\n  array: \"%s\"\n"
    "  template: {command: [train]}\n";

std::string spec_with(const std::string& name, const std::string& array) {
  char buf[512];
  std::snprintf(buf, sizeof buf, kSpec, name.c_str(), array.c_str());
  return buf;
}

TEST(ArraySpecField, IsParsedStoredAndReadBack) {
  auto m = parse_job_manifest(spec_with("sweep", "0-15:4%2"), "job.yaml");
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(m->array, "0-15:4%2");
  auto back = parse_stored_job_manifest(job_manifest_to_json(*m), "stored");
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, *m);
  auto from_yaml = parse_job_manifest(job_manifest_to_yaml(*m), "shown.yaml");
  ASSERT_TRUE(from_yaml.is_ok()) << from_yaml.status().to_string();
  EXPECT_EQ(*from_yaml, *m);
}

TEST(ArraySpecField, ErrorsNameFileLineAndField) {
  auto bad = parse_job_manifest(spec_with("sweep", "9-1"), "job.yaml");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("job.yaml:5:10: spec.array: \"9-1\": the range 9-1 ends"),
            std::string::npos)
      << bad.status().message();
}

TEST(ArraySpecField, RefusesANameTooLongForItsTaskNames) {
  const std::string name(60, 'a');
  auto bad = parse_job_manifest(spec_with(name, "0-100"), "job.yaml");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("shorten metadata.name to at most 59"), std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(parse_job_manifest(spec_with(name, "0-99"), "job.yaml").is_ok());
}

}  // namespace
}  // namespace trainyard::model
