// `bench serve` reads its flags as vLLM 0.13 does: FlexibleArgumentParser's '_' -> '-' and Python argparse's
// unambiguous-prefix matching (allow_abbrev), with argparse's ambiguity message and exact-match precedence.
#include "servelab/bench/argparse_compat.h"

#include <gtest/gtest.h>

#include "servelab/bench/config.h"

namespace servelab::bench {
namespace {

using Args = std::vector<std::string>;

// A small flag table in registration order, to pin exact argparse messages.
const Args kFlags = {"--help",
                     "--tokenizer",
                     "--tokenizer-mode",
                     "--num-prompts",
                     "--random-input-len",
                     "--random-output-len",
                     "--random-range-ratio",
                     "--seed"};

std::string error_of(const Args& args, const Args& flags = kFlags) {
  try {
    normalize_long_flags(args, flags);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ArgparseCompat, UnderscoresReadAsDashes) {
  EXPECT_EQ(normalize_long_flags({"--num_prompts", "10"}, kFlags), (Args{"--num-prompts", "10"}));
  EXPECT_EQ(normalize_long_flags({"--random_input_len=5"}, kFlags), (Args{"--random-input-len=5"}));
  // Only the key: a value after '=' keeps its underscores, and so do values in their own token.
  EXPECT_EQ(normalize_long_flags({"--tokenizer=org/my_tok", "--seed", "a_b"}, kFlags),
            (Args{"--tokenizer=org/my_tok", "--seed", "a_b"}));
}

TEST(ArgparseCompat, UnambiguousPrefixesExpand) {
  EXPECT_EQ(normalize_long_flags({"--num-prompt", "10"}, kFlags), (Args{"--num-prompts", "10"}));
  EXPECT_EQ(normalize_long_flags({"--num", "10"}, kFlags), (Args{"--num-prompts", "10"}));
  EXPECT_EQ(normalize_long_flags({"--num-p=7"}, kFlags), (Args{"--num-prompts=7"}));
  EXPECT_EQ(normalize_long_flags({"--num_p=7"}, kFlags), (Args{"--num-prompts=7"}));
  EXPECT_EQ(normalize_long_flags({"--random-in", "64"}, kFlags), (Args{"--random-input-len", "64"}));
  EXPECT_EQ(normalize_long_flags({"--tokenizer-m", "slow"}, kFlags), (Args{"--tokenizer-mode", "slow"}));
  EXPECT_EQ(normalize_long_flags({"--he"}, kFlags), (Args{"--help"}));
}

TEST(ArgparseCompat, ExactMatchWinsOverPrefixes) {
  // "--tokenizer" is a prefix of "--tokenizer-mode" but names a flag itself.
  EXPECT_EQ(normalize_long_flags({"--tokenizer", "gpt2"}, kFlags), (Args{"--tokenizer", "gpt2"}));
  EXPECT_EQ(normalize_long_flags({"--tokenizer=gpt2"}, kFlags), (Args{"--tokenizer=gpt2"}));
  EXPECT_EQ(normalize_long_flags({"--seed", "3"}, kFlags), (Args{"--seed", "3"}));
}

TEST(ArgparseCompat, AmbiguousPrefixIsArgparsesError) {
  EXPECT_EQ(
      error_of({"--random", "5"}),
      "ambiguous option: --random could match --random-input-len, --random-output-len, --random-range-ratio");
  EXPECT_EQ(error_of({"--random-r_x=1"}), "");  // no flag starts with it: left for "unrecognized"
  EXPECT_EQ(error_of({"--token", "x"}),
            "ambiguous option: --token could match --tokenizer, --tokenizer-mode");
  // argparse names the token as given, '=value' included (after vLLM's '_' -> '-').
  EXPECT_EQ(error_of({"--random_o=1", "--random_=2"}),
            "ambiguous option: --random-=2 could match --random-input-len, --random-output-len, "
            "--random-range-ratio");
}

TEST(ArgparseCompat, OtherTokensAreUntouched) {
  EXPECT_EQ(normalize_long_flags({"--bogus_flag", "1", "-1", "-h", "inf", "--"}, kFlags),
            (Args{"--bogus-flag", "1", "-1", "-h", "inf", "--"}));
  // After "--" everything is positional for argparse: no rewriting, no ambiguity error.
  EXPECT_EQ(normalize_long_flags({"--", "--num_p", "--random"}, kFlags), (Args{"--", "--num_p", "--random"}));
}

// The real `bench serve` flags, through CLI11, as the command parses them.
struct Parsed {
  RunOptions config;
  Args extras;
};
Parsed parse_argv(const Args& args) {
  Parsed p;
  CLI::App app{"test", "servelab bench serve"};
  add_bench_flags(app, p.config);
  app.allow_extras();
  p.extras = parse_bench_args(app, args);
  return p;
}

TEST(ArgparseCompat, BenchServeFlags) {
  EXPECT_EQ(parse_argv({"--num_prompts", "10"}).config.num_prompts, 10);
  EXPECT_EQ(parse_argv({"--num-prompt", "11"}).config.num_prompts, 11);
  EXPECT_EQ(parse_argv({"--num-prompt=12"}).config.num_prompts, 12);
  EXPECT_EQ(parse_argv({"--ready_check_timeout_sec", "0"}).config.ready_check_timeout_s, 0);
  EXPECT_EQ(parse_argv({"--percentile_metrics=ttft,e2el"}).config.percentile_metrics, "ttft,e2el");
  Parsed p = parse_argv({"--tokenizer", "gpt2", "--tokenizer_mode", "slow", "--dataset_name=sharegpt"});
  EXPECT_EQ(p.config.tokenizer, "gpt2");
  EXPECT_EQ(p.config.tokenizer_mode, "slow");
  EXPECT_EQ(p.config.dataset_name, "sharegpt");
  // A repeated flag keeps its last value whatever spelling each occurrence used (argparse).
  EXPECT_EQ(parse_argv({"--num-prompt", "5", "--num_prompts", "9"}).config.num_prompts, 9);
  EXPECT_EQ(parse_argv({"--num_prompts", "9", "--num-p", "5"}).config.num_prompts, 5);
  // Unknown flags come back in order, with their values, for the "unrecognized arguments" message.
  EXPECT_EQ(parse_argv({"--num-promptz", "5", "--seed", "1"}).extras, (Args{"--num-promptz", "5"}));
  try {
    parse_argv({"--random", "5"});
    FAIL() << "--random accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("ambiguous option: --random could match --random-input-len, ", 0),
              0u)
        << e.what();
  }
  try {
    parse_argv({"--he"});
    FAIL() << "--he accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "ambiguous option: --he could match --help, --header");
  }
  EXPECT_THROW(parse_argv({"--hel"}), CLI::CallForHelp);
  EXPECT_THROW(parse_argv({"--tokenizer-mode", "fast"}), CLI::ValidationError);
}

}  // namespace
}  // namespace servelab::bench
