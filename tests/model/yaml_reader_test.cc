// The YAML reader every config and spec parser uses: located errors for each kind of mistake,
// the limits, and hostile input that must end as an error, never a crash or a throw.
#include "model/yaml_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace trainyard::model {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// The root mapping of `text` in "t.yaml"; fails the test when it does not load.
YamlField root_of(const YamlReader& r, std::string_view text) {
  auto root = r.load_mapping(text, "a mapping");
  EXPECT_TRUE(root.is_ok()) << root.status().message();
  return root.is_ok() ? *root : YamlField{};
}

std::string load_error(std::string_view text, const YamlLimits& limits = kYamlLimits) {
  auto doc = load_yaml(text, "t.yaml", limits);
  EXPECT_FALSE(doc.is_ok()) << text.substr(0, 200);
  return doc.is_ok() ? "" : doc.status().message();
}

TEST(YamlReader, WrongTypesNameFileLineColumnPathAndValue) {
  const YamlReader r("t.yaml");
  const YamlField root = root_of(r, "pools:\n  - name: a\n    maxNodes: [1]\n    on: yes\n");
  auto top = r.fields(root, {"pools"});
  ASSERT_TRUE(top.is_ok());
  auto pools = r.items(*top->get("pools"), "");
  ASSERT_TRUE(pools.is_ok());
  auto pool = r.fields((*pools)[0], {"name", "maxNodes", "on"});
  ASSERT_TRUE(pool.is_ok()) << pool.status().message();
  EXPECT_EQ(r.integer(*pool->get("maxNodes"), 0, 10).status().message(),
            "t.yaml:3:15: pools[0].maxNodes must be a whole number from 0 to 10, got a list");
  EXPECT_EQ(r.boolean(*pool->get("on")).status().message(),
            "t.yaml:4:9: pools[0].on must be true or false, got \"yes\"");
  EXPECT_EQ(r.string(*top->get("pools")).status().message(),
            "t.yaml:2:3: pools must be a string, got a list");
  EXPECT_EQ(r.items(*pool->get("name"), "write [a]").status().message(),
            "t.yaml:2:11: pools[0].name must be a list, got \"a\" (write [a])");
  EXPECT_EQ(r.entries(*pool->get("name")).status().message(),
            "t.yaml:2:11: pools[0].name must be a mapping of name: value, got \"a\"");
  EXPECT_EQ(r.string_list(*pool->get("name")).status().message(),
            "t.yaml:2:11: pools[0].name must be a list, got \"a\" (write it as a list: [a])");
  EXPECT_EQ(r.missing((*pools)[0], "kind", "add kind: spot").message(),
            "t.yaml:2:5: pools[0].kind is required (add kind: spot)");
}

TEST(YamlReader, NumbersAreRangeCheckedAndPlain) {
  const YamlReader r("t.yaml");
  const YamlField root = root_of(r, "n: 7\n");
  const YamlField n = *r.fields(root, {"n"})->get("n");
  EXPECT_EQ(*r.integer(n, 0, 10), 7);
  EXPECT_EQ(r.integer(n, 0, 5).status().message(),
            "t.yaml:1:4: n must be a whole number from 0 to 5, got \"7\"");
  EXPECT_EQ(r.number(n, 0, 5, "a number of seconds", "at most 5 s").status().message(),
            "t.yaml:1:4: n must be a number of seconds from 0 to 5, got \"7\" (at most 5 s)");
  for (const char* ok : {"0", "-3", "+4", "9223372036854775807"}) {
    const YamlField f = root_of(r, std::string("n: ") + ok);
    EXPECT_TRUE(r.integer(*r.fields(f, {"n"})->get("n"), INT64_MIN, INT64_MAX).is_ok()) << ok;
  }
  for (const char* bad : {"010", "0x10", "1e3", "1.0", "", "~", "1_000", "9223372036854775808",
                          "\" 1\"", "--1", "+"}) {
    const YamlField f = root_of(r, std::string("n: ") + bad);
    EXPECT_FALSE(r.integer(*r.fields(f, {"n"})->get("n"), INT64_MIN, INT64_MAX).is_ok()) << bad;
  }
  for (const char* ok : {"1.5", ".5", "2", "1e3", "-0.25", "+3"}) {
    const YamlField f = root_of(r, std::string("n: ") + ok);
    EXPECT_TRUE(r.number(*r.fields(f, {"n"})->get("n"), -1, 1e4).is_ok()) << ok;
  }
  for (const char* bad : {".inf", "nan", ".nan", "inf", "0x10", "1e999", "one", "[1]", "1,5"}) {
    const YamlField f = root_of(r, std::string("n: ") + bad);
    EXPECT_FALSE(r.number(*r.fields(f, {"n"})->get("n"), -1e300, 1e300).is_ok()) << bad;
  }
}

TEST(YamlReader, UnknownKeysSuggestTheClosestAndListAllowed) {
  const YamlReader r("c.yaml");
  const YamlField root = root_of(r, "capacity:\n  pools: []\n  maxNode: 3\n");
  auto top = r.fields(root, {"capacity"});
  ASSERT_TRUE(top.is_ok());
  EXPECT_EQ(r.fields(*top->get("capacity"), {"pools", "maxNodes"}).status().message(),
            "c.yaml:3:3: unknown field \"capacity.maxNode\" (did you mean \"maxNodes\"?; allowed: "
            "pools, maxNodes)");
  EXPECT_EQ(r.fields(root, {"zzzzzzzz"}).status().message(),
            "c.yaml:1:1: unknown field \"capacity\" (allowed: zzzzzzzz)");
}

TEST(YamlReader, DuplicateAndNonStringKeysAreRefused) {
  const YamlReader r("t.yaml");
  const YamlField dup = root_of(r, "a: 1\nb: 2\na: 3\n");
  EXPECT_EQ(r.fields(dup, {"a", "b"}).status().message(),
            "t.yaml:3:1: field \"a\" is given twice (first on line 1)");
  EXPECT_EQ(r.entries(dup).status().message(),
            "t.yaml:3:1: field \"a\" is given twice (first on line 1)");
  const YamlField nested = root_of(r, "x:\n  k: 1\n  k: 2\n");
  EXPECT_EQ(r.entries(*r.fields(nested, {"x"})->get("x")).status().message(),
            "t.yaml:3:3: field \"x.k\" is given twice (first on line 2)");
  const YamlField odd = root_of(r, "[a]: 1\n");
  EXPECT_EQ(r.fields(odd, {"a"}).status().message(), "t.yaml:1:1: field names must be strings");
}

TEST(YamlReader, StringsAreBoundedAndFreeOfNul) {
  const YamlReader r("t.yaml", {.max_string_bytes = 4});
  const YamlField root = root_of(r, "a: abcd\nb: abcde\nc: \"x\\0y\"\nd: \"\"\n");
  auto f = r.fields(root, {"a", "b", "c", "d"});
  ASSERT_TRUE(f.is_ok());
  EXPECT_EQ(*r.string(*f->get("a")), "abcd");
  EXPECT_EQ(r.string(*f->get("b")).status().message(),
            "t.yaml:2:4: b must be a string of at most 4 bytes, got \"abcde\" (it has 5 bytes)");
  EXPECT_EQ(r.string(*f->get("c")).status().message(),
            "t.yaml:3:4: c must be a string without NUL characters, got \"x\\x00y\"");
  EXPECT_EQ(r.non_empty_string(*f->get("d")).status().message(),
            "t.yaml:4:4: d must be a non-empty string, got \"\"");
}

TEST(YamlLoad, DeepNestingIsRefusedWhereItGoesTooDeep) {
  // Mappings 17 deep: "k:\n  k:\n    k: ..."; the 17th is the value of line 16.
  std::string deep;
  for (int i = 0; i < 17; ++i) deep += std::string(2 * static_cast<size_t>(i), ' ') + "k:\n";
  deep += std::string(34, ' ') + "k: 1\n";
  EXPECT_EQ(load_error(deep),
            "t.yaml:17:33: mappings and lists nest deeper than 16 levels here; "
            "no trainyard file needs more than a few");
  std::string ok(16, '[');
  ok += std::string(16, ']');
  EXPECT_TRUE(load_yaml(ok, "t.yaml").is_ok());
  // Far beyond yaml-cpp's own recursion guard: still a located error, no stack overflow.
  EXPECT_CONTAINS(load_error(std::string(100000, '[')), "mappings and lists nest deeper than 16");
  EXPECT_EQ(load_error("a:\n  b:\n    c: {d: [1]}\n", {.max_depth = 3}),
            "t.yaml:3:8: mappings and lists nest deeper than 3 levels here; no trainyard file "
            "needs more than a few");
}

TEST(YamlLoad, LargeDocumentsAndCollectionsAreRefused) {
  EXPECT_EQ(load_error(std::string((size_t{1} << 20) + 1, ' ')),
            "t.yaml: the document has 1048577 bytes; at most 1048576 are accepted");
  EXPECT_EQ(load_error("[1, 2, 3, 4]", {.max_collection_size = 3}),
            "t.yaml:1:11: a list with more than 3 items; split it up or shorten it");
  EXPECT_EQ(load_error("a: 1\nb: 2\nc: 3\nd: 4\n", {.max_collection_size = 3}),
            "t.yaml:4:1: a mapping with more than 3 entries; split it up or shorten it");
  EXPECT_TRUE(
      load_yaml("a: 1\nb: 2\nc: [1, 2, 3]\n", "t.yaml", {.max_collection_size = 3}).is_ok());
}

TEST(YamlLoad, TextProblemsAreLocated) {
  EXPECT_EQ(load_error(std::string("a: 1\nb: x\0y\n", 11)),
            "t.yaml:2:5: the text contains a NUL byte");
  EXPECT_EQ(load_error("a: 1\nb: \xff\n"), "t.yaml:2:4: the text is not valid UTF-8");
  EXPECT_CONTAINS(load_error("a: [1, 2\n"), "t.yaml:2:1: not valid YAML: ");
  // yaml-cpp 0.7's LoadAll loops forever on this; the scan refuses it.
  EXPECT_CONTAINS(load_error("a: 1\n,\n"), "t.yaml:");
  EXPECT_CONTAINS(load_error("*x\n"), "not valid YAML");
}

TEST(YamlLoad, OneMappingPerFile) {
  const YamlReader r("t.yaml");
  EXPECT_EQ(r.load_mapping("a: 1\n---\nb: 2\n", "a mapping of settings").status().message(),
            "t.yaml:2:1: a second document starts here; the file holds one (remove this \"---\" "
            "and what follows, or move it to a file of its own)");
  EXPECT_TRUE(r.load_mapping("a: 1\n---\n", "x").is_ok());
  EXPECT_EQ(r.load_mapping("", "a mapping of settings").status().message(),
            "t.yaml:1:1: the file is empty; write a mapping of settings");
  EXPECT_EQ(r.load_mapping("- a\n", "a mapping of settings").status().message(),
            "t.yaml:1:1: the file must be a mapping of settings, got a list");
}

TEST(YamlLoad, AliasCyclesEndAsErrorsNotRecursion) {
  const YamlReader r("t.yaml");
  auto root = r.load_mapping("a: &x [*x]\nb: &y {k: *y}\n", "a mapping");
  ASSERT_TRUE(root.is_ok()) << root.status().message();
  auto f = r.fields(*root, {"a", "b"});
  ASSERT_TRUE(f.is_ok());
  EXPECT_FALSE(r.string_list(*f->get("a")).is_ok());
  auto b = r.fields(*f->get("b"), {"k"});
  ASSERT_TRUE(b.is_ok());
  EXPECT_FALSE(r.string(*b->get("k")).is_ok());
}

}  // namespace
}  // namespace trainyard::model
