// Tests of `bench serve` flag parsing and validation against vLLM 0.13's argparse/main_async behaviour.
#include "servelab/bench/config.h"

#include <gtest/gtest.h>

#include <cmath>

namespace servelab::bench {
namespace {

// Parses `args` (without the program name) into a RunOptions the way the CLI does.
RunOptions parse(std::vector<std::string> args) {
  CLI::App app{"test", "serve"};
  RunOptions config;
  add_bench_flags(app, config);
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector reversed
  app.parse(args);
  return config;
}

std::string resolve_error(const RunOptions& c) {
  try {
    resolve(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(RunOptions, DefaultsAreVllm013) {
  RunOptions c = parse({});
  EXPECT_EQ(c.backend, "openai");
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 8000);
  EXPECT_EQ(c.endpoint, "/v1/completions");
  EXPECT_EQ(c.dataset_name, "random");
  EXPECT_EQ(c.num_prompts, 1000);
  EXPECT_EQ(c.seed, 0);
  EXPECT_EQ(c.random_input_len, 1024);
  EXPECT_EQ(c.random_output_len, 128);
  EXPECT_EQ(c.custom_output_len, 256);
  EXPECT_EQ(c.prefix_repetition_prefix_len, 256);
  EXPECT_EQ(c.prefix_repetition_suffix_len, 256);
  EXPECT_EQ(c.prefix_repetition_num_prefixes, 10);
  EXPECT_EQ(c.prefix_repetition_output_len, 128);
  EXPECT_EQ(c.ready_check_timeout_s, 600);  // 0.13 (newer vLLM: 0)
  EXPECT_EQ(c.burstiness, 1.0);
  EXPECT_FALSE(c.model.has_value());
  EXPECT_FALSE(c.max_concurrency.has_value());
  ResolvedConfig r = resolve(c);
  EXPECT_TRUE(std::isinf(r.request_rate));
  EXPECT_EQ(r.percentile_metrics, (std::vector<std::string>{"ttft", "tpot", "itl"}));
  EXPECT_EQ(r.metric_percentiles, (std::vector<double>{99}));
  EXPECT_TRUE(r.goodput_slo_ms.empty());
  EXPECT_EQ(r.request_id_prefix.size(), std::string("bench-12345678-").size());
  EXPECT_EQ(r.request_id_prefix.substr(0, 6), "bench-");
}

TEST(RunOptions, ParsesEveryFlagFamily) {
  RunOptions c = parse({"--backend",
                        "openai-chat",
                        "--endpoint",
                        "/v1/chat/completions",
                        "--base-url",
                        "http://h:1",
                        "--header",
                        "a=1",
                        "b = x=y ",
                        "--model",
                        "m/x",
                        "--served-model-name",
                        "srv",
                        "--tokenizer",
                        "/t.json",
                        "--dataset-name",
                        "sharegpt",
                        "--dataset-path",
                        "/d.json",
                        "--num-prompts",
                        "7",
                        "--seed",
                        "3",
                        "--request-rate",
                        "2.5",
                        "--burstiness",
                        "0.5",
                        "--max-concurrency",
                        "4",
                        "--num-warmups",
                        "2",
                        "--ready-check-timeout-sec",
                        "0",
                        "--ignore-eos",
                        "--temperature",
                        "0.7",
                        "--top-p",
                        "0.9",
                        "--top-k",
                        "5",
                        "--min-p",
                        "0.1",
                        "--frequency-penalty",
                        "0.2",
                        "--presence-penalty",
                        "0.3",
                        "--repetition-penalty",
                        "1.1",
                        "--extra-body",
                        "{\"x\": 1}",
                        "--percentile-metrics",
                        "ttft,e2el",
                        "--metric-percentiles",
                        "50,99.9",
                        "--goodput",
                        "ttft:100",
                        "e2el:2000.5",
                        "--save-result",
                        "--save-detailed",
                        "--append-result",
                        "--result-dir",
                        "/tmp/r",
                        "--result-filename",
                        "f.json",
                        "--metadata",
                        "tp=8",
                        "--label",
                        "L",
                        "--disable-tqdm",
                        "--request-id-prefix",
                        "p-",
                        "--no-oversample",
                        "--disable-shuffle",
                        "--insecure",
                        "--sharegpt-output-len",
                        "64"});
  EXPECT_EQ(c.backend, "openai-chat");
  EXPECT_EQ(c.header, (std::vector<std::string>{"a=1", "b = x=y "}));
  EXPECT_EQ(*c.served_model_name, "srv");
  EXPECT_EQ(c.burstiness, 0.5);
  EXPECT_EQ(*c.max_concurrency, 4);
  EXPECT_TRUE(c.ignore_eos && c.save_result && c.save_detailed && c.append_result && c.disable_tqdm);
  EXPECT_TRUE(c.no_oversample && c.disable_shuffle && c.insecure);
  EXPECT_EQ(*c.top_k, 5);
  EXPECT_DOUBLE_EQ(*c.repetition_penalty, 1.1);
  ResolvedConfig r = resolve(c);
  EXPECT_EQ(r.request_rate, 2.5);
  EXPECT_EQ(r.headers[1], (std::pair<std::string, std::string>{"b", "x=y"}));
  EXPECT_EQ(r.percentile_metrics, (std::vector<std::string>{"ttft", "e2el"}));
  EXPECT_EQ(r.metric_percentiles, (std::vector<double>{50, 99.9}));
  EXPECT_EQ(r.goodput_slo_ms.at("ttft"), 100.0);
  EXPECT_EQ(r.goodput_slo_ms.at("e2el"), 2000.5);
  EXPECT_EQ(r.extra_body["x"], 1);
  EXPECT_EQ(r.request_id_prefix, "p-");
  EXPECT_EQ(*r.sharegpt_output_len, 64);
  EXPECT_EQ(r.metadata[0], (std::pair<std::string, std::string>{"tp", "8"}));
}

TEST(RunOptions, UnknownFlagIsNamed) {
  try {
    parse({"--num-prompt", "5"});
    FAIL() << "expected a parse error";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("--num-prompt"), std::string::npos) << e.what();
  }
}

TEST(RunOptions, RepeatedFlagKeepsLastValueAsArgparse) {
  RunOptions c = parse({"--backend", "openai", "--num-prompts", "5", "--backend", "openai-chat", "--model",
                        "a", "--model", "b", "--ignore-eos", "--ignore-eos", "--header", "a=1", "b=2"});
  EXPECT_EQ(c.backend, "openai-chat");
  EXPECT_EQ(*c.model, "b");
  EXPECT_TRUE(c.ignore_eos);
  EXPECT_EQ(c.header.size(), 2u);
}

TEST(RunOptions, ChoicesAreChecked) {
  EXPECT_THROW(parse({"--backend", "tgi"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--ramp-up-strategy", "cubic"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--num-prompts", "1.5"}), CLI::ParseError);
}

TEST(RunOptions, RampUpRatesMapTheThreeFlags) {
  EXPECT_EQ(ramp_up_rates(parse({})).kind, servelab::schedule::RampUp::kNone);
  const RampUpRates lin = ramp_up_rates(
      parse({"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "2", "--ramp-up-end-rps", "9"}));
  EXPECT_EQ(lin.kind, servelab::schedule::RampUp::kLinear);
  EXPECT_EQ(lin.start_rps, 2);
  EXPECT_EQ(lin.end_rps, 9);
  EXPECT_EQ(ramp_up_rates(parse({"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "1",
                                 "--ramp-up-end-rps", "8"}))
                .kind,
            servelab::schedule::RampUp::kExponential);
}

TEST(RunOptions, InputOutputLenMapping) {
  RunOptions c = parse({"--input-len", "100", "--output-len", "20"});
  ResolvedConfig r = resolve(c);
  EXPECT_EQ(r.random_input_len, 100);
  EXPECT_EQ(r.random_output_len, 20);
  EXPECT_EQ(*r.sharegpt_output_len, 20);
  EXPECT_EQ(r.custom_output_len, 20);
  EXPECT_EQ(r.prefix_repetition_output_len, 20);
}

TEST(RunOptions, VllmValidationMessages) {
  RunOptions c;
  c.ramp_up_strategy = "linear";
  c.request_rate = "5";
  EXPECT_EQ(
      resolve_error(c),
      "When using ramp-up, do not specify --request-rate. The request rate will be controlled by ramp-up "
      "parameters. Please remove the --request-rate argument.");
  c.request_rate = "inf";
  EXPECT_EQ(
      resolve_error(c),
      "When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified");
  c.ramp_up_start_rps = 10;
  c.ramp_up_end_rps = 5;
  EXPECT_EQ(resolve_error(c), "Ramp-up start RPS must be less than end RPS");
  c.ramp_up_strategy = "exponential";
  c.ramp_up_start_rps = 0;
  EXPECT_EQ(resolve_error(c), "For exponential ramp-up, the start RPS cannot be 0.");
  c.ramp_up_start_rps = 1;
  EXPECT_EQ(resolve_error(c), "");

  RunOptions g;
  g.goodput = {"ttft=5"};
  EXPECT_NE(resolve_error(g).find("Invalid format found for service level objectives."), std::string::npos);
  g.goodput = {"itl:5"};
  EXPECT_EQ(resolve_error(g),
            "Invalid metric name found, itl: 5.0. The service level objective name should be one of "
            "['ttft', 'tpot', 'e2el']. ");
  g.goodput = {"tpot:-1"};
  EXPECT_EQ(resolve_error(g),
            "Invalid value found, tpot: -1.0. The service level objective value should be non-negative.");

  RunOptions b;
  b.burstiness = 0;
  EXPECT_EQ(resolve_error(b), "A positive burstiness factor is expected, but given 0.0.");
  RunOptions h;
  h.header = {"noequals"};
  EXPECT_NE(resolve_error(h).find("Invalid header format. Please use KEY=VALUE format."), std::string::npos);
  RunOptions m;
  m.metadata = {"x"};
  EXPECT_NE(resolve_error(m).find("Invalid metadata format. Please use KEY=VALUE format."),
            std::string::npos);
  RunOptions chat;
  chat.backend = "openai-chat";
  EXPECT_NE(resolve_error(chat).find("OpenAI Chat Completions API URL must end with 'chat/completions'."),
            std::string::npos);
  RunOptions seed;
  seed.seed = -1;
  EXPECT_NE(resolve_error(seed).find("Seed must be between 0 and 2**32 - 1"), std::string::npos);
  seed.seed = 4294967295LL;
  EXPECT_EQ(resolve_error(seed), "");
  RunOptions mc;
  mc.max_concurrency = 0;
  EXPECT_NE(resolve_error(mc).find("--max-concurrency"), std::string::npos);
}

TEST(RunOptions, DatasetFlagsOfSonnetBurstGptSpecBenchRandomMmHf) {
  const RunOptions d = parse({});
  EXPECT_EQ(d.sonnet_input_len, 550);  // vLLM defaults
  EXPECT_EQ(d.sonnet_output_len, 150);
  EXPECT_EQ(d.sonnet_prefix_len, 200);
  EXPECT_EQ(d.spec_bench_output_len, 256);
  EXPECT_EQ(d.random_mm_base_items_per_request, 1);
  EXPECT_FALSE(d.no_stream);
  const RunOptions c = parse({"--dataset-name",
                              "hf",
                              "--dataset-path",
                              "philschmid/mt-bench",
                              "--sonnet-input-len",
                              "300",
                              "--sonnet-prefix-len",
                              "50",
                              "--sonnet-output-len",
                              "20",
                              "--spec-bench-output-len",
                              "64",
                              "--spec-bench-category",
                              "math",
                              "--random-mm-base-items-per-request",
                              "2",
                              "--random-mm-num-mm-items-range-ratio",
                              "0.5",
                              "--random-mm-limit-mm-per-prompt",
                              R"({"image": 4})",
                              "--random-mm-bucket-config",
                              "{(64, 64, 1): 1.0}",
                              "--hf-subset",
                              "s",
                              "--hf-split",
                              "test",
                              "--hf-name",
                              "x/y",
                              "--hf-output-len",
                              "33",
                              "--no-stream"});
  const dataset::DatasetOptions o = dataset_options(c, resolve(c));
  EXPECT_EQ(o.dataset_name, "hf");
  EXPECT_EQ(o.sonnet_input_len, 300);
  EXPECT_EQ(o.sonnet_prefix_len, 50);
  EXPECT_EQ(o.sonnet_output_len, 20);
  EXPECT_EQ(o.spec_bench_output_len, 64);
  EXPECT_EQ(o.spec_bench_category, "math");
  EXPECT_EQ(o.random_mm_base_items_per_request, 2);
  EXPECT_EQ(o.random_mm_num_mm_items_range_ratio, 0.5);
  EXPECT_EQ(o.random_mm_limit_mm_per_prompt, (std::vector<std::pair<std::string, int>>{{"image", 4}}));
  ASSERT_EQ(o.random_mm_bucket_config.size(), 1u);
  EXPECT_EQ(o.random_mm_bucket_config[0].height, 64);
  EXPECT_EQ(o.hf_subset, "s");
  EXPECT_EQ(o.hf_split, "test");
  EXPECT_EQ(o.hf_name, "x/y");
  EXPECT_EQ(o.hf_output_len, 33);
  EXPECT_TRUE(o.no_stream);
  EXPECT_NE(namespace_repr(c).find("hf_name='x/y', hf_output_len=33, hf_split='test', hf_subset='s', host="),
            std::string::npos);
  EXPECT_NE(namespace_repr(c).find(
                "sonnet_input_len=300, sonnet_output_len=20, sonnet_prefix_len=50, "
                "spec_bench_category='math', spec_bench_output_len=64, start_at=None, temperature=None"),
            std::string::npos)
      << namespace_repr(c);
}

TEST(RunOptions, DatasetChecks) {
  RunOptions s;
  s.dataset_name = "sharegpt";
  EXPECT_NE(resolve_error(s).find("dataset_path must be provided"), std::string::npos);
  RunOptions r;
  r.dataset_path = "/x.json";
  EXPECT_NE(resolve_error(r).find("--dataset-path is not used with --dataset-name random"),
            std::string::npos);
  RunOptions u;
  u.dataset_name = "speed_bench";
  EXPECT_NE(resolve_error(u).find("speed_bench is a vLLM dataset servelab does not support"),
            std::string::npos);
  RunOptions so;  // sonnet, burstgpt, spec_bench read a file; random-mm generates (and needs openai-chat)
  so.dataset_name = "sonnet";
  EXPECT_NE(resolve_error(so).find("--dataset-name sonnet needs --dataset-path"), std::string::npos);
  RunOptions mm;
  mm.dataset_name = "random-mm";
  EXPECT_NE(resolve_error(mm).find("Multi-modal content is only supported on 'openai-chat'"),
            std::string::npos);
  mm.backend = "openai-chat";
  mm.endpoint = "/v1/chat/completions";
  mm.random_mm_bucket_config = "{(64, 32, 1): 1.0}";
  mm.random_mm_limit_mm_per_prompt = R"({"image": 3})";
  const ResolvedConfig mres = resolve(mm);
  ASSERT_EQ(mres.random_mm_bucket_config.size(), 1u);
  EXPECT_EQ(mres.random_mm_bucket_config[0].height, 64);
  EXPECT_EQ(mres.random_mm_limit_mm_per_prompt.at(0).second, 3);
  const dataset::DatasetOptions md = dataset_options(mm, mres);
  EXPECT_EQ(md.random_mm_bucket_config[0].width, 32);
  EXPECT_EQ(md.backend, "openai-chat");
  EXPECT_NE(namespace_repr(mm).find("random_mm_bucket_config={(64, 32, 1): 1.0}, "
                                    "random_mm_limit_mm_per_prompt={'image': 3}, "
                                    "random_mm_num_mm_items_range_ratio=0.0"),
            std::string::npos)
      << namespace_repr(mm);
  mm.random_mm_bucket_config = "{(64, 32): 1.0}";
  EXPECT_NE(resolve_error(mm).find("--random-mm-bucket-config {(64, 32): 1.0}"), std::string::npos);
  RunOptions rr;
  rr.random_range_ratio = "1.0";
  EXPECT_NE(resolve_error(rr).find("--random-range-ratio 1.0: input ratio 1 must be in [0, 1)"),
            std::string::npos)
      << resolve_error(rr);
  rr.random_range_ratio = R"({"input": 0.25, "output": 0.5})";
  ResolvedConfig res = resolve(rr);
  EXPECT_EQ(res.random_range_ratio.input, 0.25);
  EXPECT_EQ(res.random_range_ratio.output, 0.5);
  RunOptions pr;
  pr.dataset_name = "prefix_repetition";
  pr.num_prompts = 5;
  EXPECT_NE(resolve_error(pr).find("must be greater than or equal to num_prefixes"), std::string::npos);
}

TEST(RunOptions, ReportingChecks) {
  RunOptions c;
  c.percentile_metrics = "ttft,ttlt";
  EXPECT_NE(resolve_error(c).find("unknown metric 'ttlt'"), std::string::npos);
  RunOptions p;
  p.metric_percentiles = "50,101";
  EXPECT_NE(resolve_error(p).find("[0, 100]"), std::string::npos);
  RunOptions e;
  e.extra_body = "[1,2]";
  EXPECT_NE(resolve_error(e).find("--extra-body"), std::string::npos);
  RunOptions rate;
  rate.request_rate = "fast";
  EXPECT_EQ(resolve_error(rate), "argument --request-rate: invalid float value: 'fast'");
  rate.request_rate = "0";
  EXPECT_NE(resolve_error(rate).find("--request-rate must be > 0"), std::string::npos);
}

TEST(RunOptions, PythonFloats) {
  EXPECT_TRUE(std::isinf(parse_python_float("inf", "x")));
  EXPECT_TRUE(std::isinf(parse_python_float(" Infinity ", "x")));
  EXPECT_EQ(parse_python_float("1e3", "x"), 1000.0);
  EXPECT_EQ(parse_python_float(".5", "x"), 0.5);
  EXPECT_EQ(parse_python_float("-2", "x"), -2.0);
  EXPECT_THROW(parse_python_float("", "x"), ConfigError);
  EXPECT_THROW(parse_python_float("1.2.3", "x"), ConfigError);
  EXPECT_THROW(parse_python_float("0x10", "x"), ConfigError);
}

TEST(RunOptions, UrlsAndNamespace) {
  RunOptions c;
  EXPECT_EQ(build_urls(c).api_url, "http://127.0.0.1:8000/v1/completions");
  EXPECT_EQ(build_urls(c).base_url, "http://127.0.0.1:8000");
  c.host = "::1";
  EXPECT_EQ(build_urls(c).base_url, "http://[::1]:8000");
  c.base_url = "https://api.example.com/x";
  c.endpoint = "/v1/chat/completions";
  EXPECT_EQ(build_urls(c).api_url, "https://api.example.com/x/v1/chat/completions");
  c.header = {"Authorization=Bearer sk-123", "x-info=7"};
  c.request_rate = "10";
  std::string ns = namespace_repr(c);
  EXPECT_EQ(ns.find("sk-123"), std::string::npos) << ns;
  EXPECT_NE(ns.find("header=['Authorization=<redacted>', 'x-info=7']"), std::string::npos) << ns;
  EXPECT_NE(ns.find("request_rate=10.0,"), std::string::npos) << ns;
  EXPECT_EQ(ns.substr(0, 34), "Namespace(append_result=False, bac");
  EXPECT_NE(ns.find("max_concurrency=None"), std::string::npos);
  // Issue 31: --extra-body's credential-named keys are redacted in the settings line; other bodies as
  // written.
  c.extra_body = R"({"top_k": 1, "api_key": "sk-body-9"})";
  ns = namespace_repr(c);
  EXPECT_EQ(ns.find("sk-body-9"), std::string::npos) << ns;
  EXPECT_NE(ns.find(R"(extra_body='{"top_k":1,"api_key":"<redacted>"}',)"), std::string::npos) << ns;
  c.extra_body = R"({"top_k": 1})";
  EXPECT_NE(namespace_repr(c).find(R"(extra_body='{"top_k": 1}',)"), std::string::npos) << namespace_repr(c);
}

TEST(RunOptions, ServerMetricsFlags) {
  RunOptions c;
  EXPECT_EQ(c.server_metrics_interval_s, 1.0);
  EXPECT_FALSE(c.no_server_metrics);
  EXPECT_NE(namespace_repr(c).find("no_server_metrics=False, no_stream=False, num_prompts=1000,"),
            std::string::npos);
  CLI::App app;
  add_bench_flags(app, c);
  app.parse(std::vector<std::string>{"--no-server-metrics", "0.25", "--server-metrics-interval-s"});
  EXPECT_EQ(c.server_metrics_interval_s, 0.25);
  EXPECT_TRUE(c.no_server_metrics);
  EXPECT_NE(namespace_repr(c).find("served_model_name=None, server_metrics_interval_s=0.25, "
                                   "session_concurrency=None, shard=None, sharegpt"),
            std::string::npos);
  EXPECT_NE(namespace_repr(c).find("no_server_metrics=True,"), std::string::npos);
  for (double bad : {0.0, -1.0, 1e7}) {
    c.server_metrics_interval_s = bad;
    try {
      resolve(c);
      ADD_FAILURE() << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--server-metrics-interval-s must be > 0 and at most 1e6 s (got "),
                std::string::npos)
          << e.what();
    }
  }
  CLI::App app2;
  RunOptions c2;
  add_bench_flags(app2, c2);
  try {
    app2.parse(std::vector<std::string>{"often", "--server-metrics-interval-s"});
    ADD_FAILURE() << "accepted 'often'";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--server-metrics-interval-s"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace servelab::bench

namespace servelab::bench {
namespace {

// Issue 9 section 4: every credential form is absent from the Namespace line and the flag errors.
TEST(RunOptions, NamespaceAndErrorsNeverPrintCredentials) {
  RunOptions c;
  c.base_url = "https://alice:SECRET1@api.example.com:8443/x?api_key=SECRET2";
  c.header = {"Proxy-Authorization=Basic SECRET3", "X-Auth-Token=SECRET4", "x-api-key=SECRET5",
              "Cookie=SECRET6", "x-info=7"};
  const std::string ns = namespace_repr(c);
  for (int i = 1; i <= 6; ++i) EXPECT_EQ(ns.find("SECRET" + std::to_string(i)), std::string::npos) << ns;
  EXPECT_NE(ns.find("base_url='https://<redacted>@api.example.com:8443/x?api_key=<redacted>'"),
            std::string::npos)
      << ns;
  EXPECT_NE(ns.find("'Proxy-Authorization=<redacted>', 'X-Auth-Token=<redacted>', 'x-api-key=<redacted>', "
                    "'Cookie=<redacted>', 'x-info=7'"),
            std::string::npos)
      << ns;
  // A malformed --header (colon instead of '=', or a bad name): the error names the item, not the secret.
  for (const char* bad : {"Authorization: Bearer SECRET7", "Authorization Bearer SECRET7"}) {
    c.header = {bad};
    EXPECT_EQ(namespace_repr(c).find("SECRET7"), std::string::npos) << namespace_repr(c);
    try {
      resolve(c);
      FAIL() << "malformed header accepted: " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(std::string(e.what()).find("SECRET7"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--header 'Authorization"), std::string::npos) << e.what();
    }
  }
  c.header = {"Authorization: Bearer x=SECRET8"};  // '=' inside the value: an invalid header name
  try {
    resolve(c);
    FAIL() << "header name with ': ' accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("SECRET8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Invalid header name"), std::string::npos) << e.what();
  }
}

TEST(RunOptions, RequestTimeoutFlag) {
  RunOptions c;
  EXPECT_EQ(c.request_timeout_s, 21600.0);  // vLLM's aiohttp 6 h
  CLI::App app;
  add_bench_flags(app, c);
  app.parse(std::vector<std::string>{"2.5", "--request-timeout-s"});
  EXPECT_EQ(c.request_timeout_s, 2.5);
  EXPECT_NE(namespace_repr(c).find("request_timeout_s=2.5,"), std::string::npos);
  for (double bad : {0.0, -1.0, 1e308}) {
    c.request_timeout_s = bad;
    EXPECT_THROW(resolve(c), ConfigError) << bad;
  }
}

TEST(RunOptions, PreconnectFlag) {
  RunOptions c;
  EXPECT_FALSE(c.preconnect);
  EXPECT_NE(namespace_repr(c).find(", port=8000, preconnect=False, prefix_repetition_num_prefixes="),
            std::string::npos);
  CLI::App app;
  add_bench_flags(app, c);
  app.parse(std::vector<std::string>{"--preconnect"});
  EXPECT_TRUE(c.preconnect);
  EXPECT_NE(namespace_repr(c).find(", preconnect=True, "), std::string::npos);
}

}  // namespace
}  // namespace servelab::bench
