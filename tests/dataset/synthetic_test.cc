// Options/validation, and the random / prefix_repetition / custom samplers over the oracle's fake tokenizer,
// compared with numpy (Debian's /usr/bin/python3) running vLLM's algorithm.
#include <gtest/gtest.h>

#include <fstream>

#include "dataset/synthetic.h"
#include "servelab/dataset/dataset.h"
#include "test_util.h"

namespace servelab::dataset {
namespace {

using testing::error_of;

TEST(Options, ParseRangeRatio) {
  EXPECT_DOUBLE_EQ(parse_range_ratio("0.25").input, 0.25);
  EXPECT_DOUBLE_EQ(parse_range_ratio("0.25").output, 0.25);
  const RangeRatio r = parse_range_ratio(R"({"input": 0.1, "output": 0.5})");
  EXPECT_DOUBLE_EQ(r.input, 0.1);
  EXPECT_DOUBLE_EQ(r.output, 0.5);
  EXPECT_DOUBLE_EQ(parse_range_ratio(R"({"output": 0.5})").input, 0.0);
  EXPECT_NE(error_of([] { parse_range_ratio("1.0"); }).find("must be in [0, 1)"), std::string::npos);
  EXPECT_NE(error_of([] { parse_range_ratio("-0.1"); }).find("must be in [0, 1)"), std::string::npos);
  EXPECT_NE(error_of([] { parse_range_ratio("abc"); }).find("--random-range-ratio abc"), std::string::npos);
  EXPECT_NE(error_of([] { parse_range_ratio(R"({"inp": 0.1})"); }).find("unknown key \"inp\""),
            std::string::npos);
}

TEST(Options, ValidateNamesFlagsAndCombinations) {
  DatasetOptions o;
  EXPECT_NO_THROW(validate_options(o));  // vLLM defaults: random, 1000 prompts
  o.dataset_path = "/tmp/x.json";
  EXPECT_NE(error_of([&] {
              validate_options(o);
            }).find("--dataset-path /tmp/x.json cannot be used with --dataset-name random"),
            std::string::npos);
  o.dataset_name = "sharegpt";
  EXPECT_NO_THROW(validate_options(o));
  o.dataset_path.reset();
  EXPECT_NE(error_of([&] { validate_options(o); }).find("needs --dataset-path"), std::string::npos);
  o.dataset_name = "speed_bench";
  EXPECT_NE(error_of([&] { validate_options(o); }).find("does not implement yet"), std::string::npos);
  o.dataset_name = "bogus";
  EXPECT_NE(error_of([&] { validate_options(o); }).find("unknown dataset"), std::string::npos);
  o = DatasetOptions{};
  o.dataset_name = "prefix_repetition";
  o.num_prompts = 5;
  EXPECT_NE(error_of([&] { validate_options(o); }).find("--num-prompts (5) must be greater than or equal to"),
            std::string::npos);
  o = DatasetOptions{};
  o.num_prompts = 0;
  EXPECT_NE(error_of([&] { validate_options(o); }).find("--num-prompts 0"), std::string::npos);
  o = DatasetOptions{};
  o.dataset_name = "custom";
  o.dataset_path = "x.jsonl";
  o.custom_output_len = -2;
  EXPECT_NE(error_of([&] { validate_options(o); }).find("--custom-output-len -2"), std::string::npos);
}

TEST(Options, LengthAliasesFollowVllm013) {
  DatasetOptions o;
  o.input_len = 2000;
  o.output_len = 50;
  const DatasetOptions r = resolve_length_aliases(o);
  EXPECT_EQ(r.random_input_len, 2000);
  EXPECT_EQ(r.random_output_len, 50);
  EXPECT_EQ(r.sharegpt_output_len, 50);
  EXPECT_EQ(r.custom_output_len, 50);
  EXPECT_EQ(r.prefix_repetition_output_len, 50);
  EXPECT_EQ(r.prefix_repetition_prefix_len, 256);  // untouched
}

TEST(Options, RandomLengthRangesByHand) {
  // real = 1024 - 1 = 1023; [floor(1023*0.9), ceil(1023*1.1)] = [920, 1126]; output [64, 192].
  RandomLengthRanges r = random_length_ranges(1024, 128, {0.1, 0.5}, 1, 0);
  EXPECT_EQ(r.input_low, 920);
  EXPECT_EQ(r.input_high, 1126);
  EXPECT_EQ(r.output_low, 64);
  EXPECT_EQ(r.output_high, 192);
  r = random_length_ranges(1024, 1, {0.0, 0.9}, 1, 0);  // output low floor(0.1) = 0 → 1
  EXPECT_EQ(r.input_low, 1023);
  EXPECT_EQ(r.output_low, 1);
  EXPECT_EQ(r.output_high, 2);
  // vLLM issue #24591: --random-input-len 1 with a BOS tokenizer leaves nothing to sample.
  EXPECT_NE(error_of([] { random_length_ranges(1, 128, {}, 1, 0); }).find("--random-input-len is too small"),
            std::string::npos);
  EXPECT_NO_THROW(random_length_ranges(1, 128, {}, 1, 5));  // a prefix makes it valid
}

TEST(Options, ShareGptSequenceFilter) {
  EXPECT_TRUE(is_valid_sharegpt_sequence(4, 4, false));
  EXPECT_FALSE(is_valid_sharegpt_sequence(3, 100, false));
  EXPECT_FALSE(is_valid_sharegpt_sequence(100, 3, false));
  EXPECT_TRUE(is_valid_sharegpt_sequence(100, 3, true));
  EXPECT_TRUE(is_valid_sharegpt_sequence(1024, 1024, false));
  EXPECT_FALSE(is_valid_sharegpt_sequence(1025, 10, false));
  EXPECT_FALSE(is_valid_sharegpt_sequence(1024, 1025, false));
}

TEST(Oversample, RandomChoiceAfterReseedHardCoded) {
  // python3: random.seed(0); [random.choice(range(3)) for _ in range(5)] == [1, 1, 0, 1, 2]
  std::vector<SampleRequest> v(3);
  for (int i = 0; i < 3; ++i) {
    v[i].prompt = "p" + std::to_string(i);
    v[i].request_id = "r" + std::to_string(i);
  }
  oversample(v, 8, 0, "r", false, "test");
  ASSERT_EQ(v.size(), 8u);
  const char* want[] = {"p1", "p1", "p0", "p1", "p2"};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(v[3 + i].prompt, want[i]);
    EXPECT_EQ(v[3 + i].request_id, "r" + std::to_string(3 + i));
  }
  std::vector<SampleRequest> empty;
  EXPECT_NE(error_of([&] { oversample(empty, 2, 0, "", false, "file.json"); }).find("file.json"),
            std::string::npos);
  std::vector<SampleRequest> dup(2);
  dup[0].request_id = dup[1].request_id = "same";
  EXPECT_NE(error_of([&] { oversample(dup, 2, 0, "", false, "x"); }).find("duplicate request_id"),
            std::string::npos);
}

DatasetOptions random_options(int seed, int n, int in, int out, double r_in, double r_out, int prefix) {
  DatasetOptions o;
  o.seed = seed;
  o.num_prompts = n;
  o.random_input_len = in;
  o.random_output_len = out;
  o.random_range_ratio = {r_in, r_out};
  o.random_prefix_len = prefix;
  return o;
}

TEST(RandomDataset, MatchesNumpyHardCoded) {
  // /usr/bin/python3 tests/dataset/oracles/vllm_datasets_oracle.py random 42 4 9 6 0.0 0.25 0
  const auto got =
      detail::sample_random(random_options(42, 4, 9, 6, 0.0, 0.25, 0), testing::fake_tokenizer(), nullptr);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].prompt, "t435 t436 t437 t438 t439 t440 t442 t201 ");
  EXPECT_EQ(got[1].prompt, "t862 t863 t864 t865 t866 t867 t94 t526 ");
  EXPECT_EQ(got[3].prompt, "t702 t703 t704 t705 t706 t708 t709 t761 ");
  const int want_out[] = {4, 7, 7, 6};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].prompt_len, 8);
    EXPECT_EQ(got[i].output_len, want_out[i]);
    EXPECT_EQ(got[i].request_id, std::to_string(i));
  }
}

TEST(RandomDataset, MatchesNumpyOracle) {
  struct Case {
    int seed, n, in, out;
    double r_in, r_out;
    int prefix;
  } cases[] = {{0, 3, 12, 5, 0.5, 0.5, 3},
               {1, 50, 64, 32, 0.3, 0.1, 0},
               {7, 20, 200, 10, 0.0, 0.0, 17},
               {123456789, 10, 2, 1, 0.0, 0.0, 0}};
  for (const auto& c : cases) {
    char args[256];
    std::snprintf(args, sizeof args, "random %d %d %d %d %.17g %.17g %d", c.seed, c.n, c.in, c.out, c.r_in,
                  c.r_out, c.prefix);
    const auto oracle = testing::run_oracle("/usr/bin/python3", args);
    if (!oracle) FAIL() << "/usr/bin/python3 with numpy not available (make deps installs python3-numpy)";
    const auto got =
        detail::sample_random(random_options(c.seed, c.n, c.in, c.out, c.r_in, c.r_out, c.prefix),
                              testing::fake_tokenizer(), nullptr);
    ASSERT_EQ(got.size(), oracle->size()) << args;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].prompt, (*oracle)[i][0].get<std::string>()) << args << " #" << i;
      ASSERT_EQ(got[i].prompt_len, (*oracle)[i][1].get<int>()) << args << " #" << i;
      ASSERT_EQ(got[i].output_len, (*oracle)[i][2].get<int>()) << args << " #" << i;
    }
  }
}

TEST(RandomDataset, FixerReachesTargetOrReportsMismatch) {
  const auto tok = testing::fake_tokenizer();
  int draws = 0;
  // ids 7, 14 vanish on decode; the fixer appends drawn ids (here always 3) until the length is right.
  auto fixed = detail::decode_to_target_len(tok, {5, 7, 14, 9}, 4, [&](std::size_t k) {
    draws += static_cast<int>(k);
    return std::vector<std::int32_t>(k, 3);
  });
  EXPECT_EQ(fixed.tokens, (std::vector<std::int32_t>{5, 9, 3, 3}));
  EXPECT_EQ(fixed.text, "t5 t9 t3 t3 ");
  EXPECT_EQ(fixed.token_mismatch, 0);
  EXPECT_EQ(draws, 2);
  // Drawing only vanishing ids never converges: after 10 retries the mismatch is recorded.
  fixed = detail::decode_to_target_len(tok, {5}, 3,
                                       [](std::size_t k) { return std::vector<std::int32_t>(k, 21); });
  EXPECT_EQ(fixed.tokens.size(), 1u);
  EXPECT_EQ(fixed.token_mismatch, -2);
}

TEST(PrefixRepetition, MatchesNumpyOracle) {
  // Hard-coded: /usr/bin/python3 ... prefix_repetition 0 5 3 2 2 16
  DatasetOptions o;
  o.dataset_name = "prefix_repetition";
  o.seed = 0;
  o.num_prompts = 5;
  o.prefix_repetition_prefix_len = 3;
  o.prefix_repetition_suffix_len = 2;
  o.prefix_repetition_num_prefixes = 2;
  o.prefix_repetition_output_len = 16;
  auto got = detail::sample_prefix_repetition(o, testing::fake_tokenizer(), nullptr);
  const char* want[] = {"t684 t559 t629 t723 t277 ", "t684 t559 t629 t359 t9 ", "t684 t559 t629 t192 t835 ",
                        "t754 t804 t599 t396 t314 ", "t754 t804 t599 t472 t600 "};
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i].prompt, want[i]);
    EXPECT_EQ(got[i].prompt_len, 5);
    EXPECT_EQ(got[i].output_len, 16);
    EXPECT_EQ(got[i].request_id, "");  // vLLM sends no request id for prefix_repetition
  }
  o.seed = 31;
  o.num_prompts = 23;
  o.prefix_repetition_prefix_len = 40;
  o.prefix_repetition_suffix_len = 9;
  o.prefix_repetition_num_prefixes = 4;
  const auto oracle = testing::run_oracle("/usr/bin/python3", "prefix_repetition 31 23 40 9 4 16");
  if (!oracle) FAIL() << "/usr/bin/python3 with numpy not available (make deps installs python3-numpy)";
  got = detail::sample_prefix_repetition(o, testing::fake_tokenizer(), nullptr);
  ASSERT_EQ(got.size(), oracle->size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].prompt, (*oracle)[i][0].get<std::string>()) << i;
    EXPECT_EQ(got[i].prompt_len, (*oracle)[i][1].get<int>()) << i;
  }
}

std::filesystem::path write_jsonl(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("servelab_dataset_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(CustomDataset, ShufflesWithSeed0RendersAndUsesOutputTokens) {
  const auto path = write_jsonl("custom.jsonl",
                                "{\"prompt\": \"p0\", \"output_tokens\": 10}\n\n"
                                "{\"prompt\": \"p1\", \"output_tokens\": \"11\"}\n"
                                "{\"prompt\": \"p2\", \"output_tokens\": 12.0}\n"
                                "{\"prompt\": \"p3\", \"output_tokens\": 13}\n"
                                "{\"prompt\": \"p4\", \"output_tokens\": 14}\n"
                                "{\"prompt\": \"p5\", \"output_tokens\": 15}\n");
  const auto rows = detail::load_custom_rows(path);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[1].line, 3u);  // blank line 2 skipped
  DatasetOptions o;
  o.dataset_name = "custom";
  o.dataset_path = path.string();
  o.num_prompts = 4;
  o.custom_output_len = -1;
  o.seed = 99;  // ignored, as in vLLM 0.13: python3 random.seed(0); shuffle(range(6)) == [4, 2, 1, 0, 5, 3]
  auto render = [](std::string_view p) { return "<u>" + std::string(p) + "<a>"; };
  const auto got = detail::sample_custom(rows, o, testing::fake_count, render, path.string());
  ASSERT_EQ(got.size(), 4u);
  const char* want_prompt[] = {"<u>p4<a>", "<u>p2<a>", "<u>p1<a>", "<u>p0<a>"};
  const int want_out[] = {14, 12, 11, 10};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].prompt, want_prompt[i]);
    EXPECT_EQ(got[i].output_len, want_out[i]);
    EXPECT_EQ(got[i].prompt_len, 3);  // 8 bytes / 4 + 1
    EXPECT_EQ(got[i].request_id, std::to_string(i));
  }
  o.custom_output_len = 7;
  o.skip_chat_template = true;
  o.disable_shuffle = true;
  o.num_prompts = 0;  // all rows
  const auto all = detail::sample_custom(rows, o, testing::fake_count, render, path.string());
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].prompt, "p0");
  EXPECT_EQ(all[5].output_len, 7);
}

TEST(CustomDataset, ErrorsNameFileLineAndProblem) {
  auto render = [](std::string_view p) { return std::string(p); };
  DatasetOptions o;
  o.custom_output_len = -1;
  o.num_prompts = 2;
  const auto no_out = write_jsonl("custom_noout.jsonl", "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
  o.disable_shuffle = true;
  EXPECT_NE(error_of([&] {
              detail::sample_custom(detail::load_custom_rows(no_out), o, testing::fake_count, render,
                                    no_out.string());
            }).find("line 1: --custom-output-len -1 needs an \"output_tokens\""),
            std::string::npos);
  const auto bad_out = write_jsonl("custom_badout.jsonl", "{\"prompt\": \"a\", \"output_tokens\": 2.5}\n");
  EXPECT_NE(error_of([&] {
              detail::sample_custom(detail::load_custom_rows(bad_out), o, testing::fake_count, render,
                                    bad_out.string());
            }).find("invalid \"output_tokens\" 2.5"),
            std::string::npos);
  // An integer too long for int64 is read as a double: out of range, an error, not an undefined cast (fuzz
  // finding: 22222222222222222222222221 → UBSan "outside the range of representable values").
  const auto huge_out = write_jsonl("custom_hugeout.jsonl",
                                    "{\"prompt\": \"a\", \"output_tokens\": 22222222222222222222222221}\n");
  EXPECT_NE(error_of([&] {
              detail::sample_custom(detail::load_custom_rows(huge_out), o, testing::fake_count, render,
                                    huge_out.string());
            }).find("invalid \"output_tokens\" 2.22222222"),
            std::string::npos);
  const auto no_prompt = write_jsonl("custom_noprompt.jsonl", "{\"prompt\": \"a\"}\n{\"text\": \"b\"}\n");
  EXPECT_NE(error_of([&] {
              detail::load_custom_rows(no_prompt);
            }).find("line 2: the custom dataset needs a string \"prompt\""),
            std::string::npos);
  const auto bad_json = write_jsonl("custom_badjson.jsonl", "{\"prompt\": \"a\"\n");
  EXPECT_NE(error_of([&] { detail::load_custom_rows(bad_json); }).find("line 1: invalid JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace servelab::dataset
