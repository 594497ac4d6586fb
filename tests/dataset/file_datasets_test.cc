// sonnet, burstgpt, spec_bench and random-mm against hand-computed samples (Python's random, pandas
// DataFrame.sample, numpy and PIL run once by hand on the same inputs; numbers in the comments) and the
// numpy oracle (tests/dataset/oracles/vllm_datasets_oracle.py random_mm).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dataset/file_datasets.h"
#include "dataset/random_mm.h"
#include "dataset/synthetic.h"
#include "servelab/dataset/dataset.h"
#include "test_util.h"

namespace servelab::dataset {
namespace {

using testing::error_of;
using testing::words_plus_bos;
using testing::wrap_chat;

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_file_datasets_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// ----- sonnet ------------------------------------------------------------------------------------------

const std::vector<std::string> kPoem = {
    "one two three\n",          "four five\n",
    "six seven eight nine\n",   "ten\n",
    "eleven twelve thirteen\n", "fourteen fifteen sixteen seventeen eighteen\n"};
const std::string kBase = "Pick as many lines as you can from these poem lines:\n";

TEST(Sonnet, ReadsLinesLikePythonReadlines) {
  const auto path = write_file("poem.txt", "a b\r\nc\rd\n\ne");
  EXPECT_EQ(detail::load_sonnet_lines(path), (std::vector<std::string>{"a b\n", "c\n", "d\n", "\n", "e"}));
  const auto bad = write_file("bad.txt", "fine\nbad \xff byte\n");
  EXPECT_NE(error_of([&] { detail::load_sonnet_lines(bad); }).find("bad.txt: line 2: not valid UTF-8"),
            std::string::npos);
  const auto empty = write_file("empty.txt", "");
  EXPECT_NE(error_of([&] { detail::load_sonnet_lines(empty); }).find("has no lines"), std::string::npos);
}

TEST(Sonnet, PrefixAndSampledLinesMatchPythonRandom) {
  // avg_len = (4+3+5+2+4+6)/6 = 4.0; base_offset = words("<U>Pick ... lines:\n<A>") + BOS = 13;
  // num_input_lines = round((40-13)/4 = 6.75) = 7; num_prefix_lines = round((20-13)/4 = 1.75) = 2 → 5 lines
  // drawn per prompt. Python: random.seed(0); random.choices(lines, k=5) four times gives line indices
  // [5,4,2,1,3], [2,4,1,2,3], [5,3,1,4,3], [1,5,5,4,5]; formatted lengths 33, 32, 30, 38 (all <= 40).
  DatasetOptions o;
  o.dataset_name = "sonnet";
  o.num_prompts = 4;
  o.sonnet_input_len = 40;
  o.sonnet_prefix_len = 20;
  o.request_id_prefix = "s-";
  const auto out = detail::sample_sonnet(kPoem, o, words_plus_bos, wrap_chat, "poem.txt");
  ASSERT_EQ(out.size(), 4u);
  const std::vector<std::vector<int>> picks = {
      {5, 4, 2, 1, 3}, {2, 4, 1, 2, 3}, {5, 3, 1, 4, 3}, {1, 5, 5, 4, 5}};
  const std::vector<int> lens = {33, 32, 30, 38};
  for (std::size_t i = 0; i < 4; ++i) {
    std::string prompt = kBase + kPoem[0] + kPoem[1];
    for (int k : picks[i]) prompt += kPoem[static_cast<std::size_t>(k)];
    EXPECT_EQ(out[i].prompt, wrap_chat(prompt)) << i;  // completions backends get the formatted prompt
    EXPECT_EQ(out[i].prompt_len, lens[i]) << i;
    EXPECT_EQ(out[i].output_len, 150);
    EXPECT_EQ(out[i].request_id, "s-" + std::to_string(i));
  }
}

TEST(Sonnet, RejectsTooLongDrawsAndSendsTheRawPromptToChat) {
  // input 19, prefix 13: num_input_lines = round(6/4 = 1.5) = 2 (half to even), num_prefix_lines = 0.
  // random.seed(0): draws [5,4] (21 tokens, rejected), [2,1] (19), [3,2] (18), [4,1] (18).
  DatasetOptions o;
  o.num_prompts = 3;
  o.sonnet_input_len = 19;
  o.sonnet_prefix_len = 13;
  o.sonnet_output_len = 7;
  o.backend = "openai-chat";
  o.request_id_prefix = "c";
  const auto out = detail::sample_sonnet(kPoem, o, words_plus_bos, wrap_chat, "poem.txt");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].prompt, kBase + kPoem[2] + kPoem[1]);
  EXPECT_EQ(out[1].prompt, kBase + kPoem[3] + kPoem[2]);
  EXPECT_EQ(out[2].prompt, kBase + kPoem[4] + kPoem[1]);
  EXPECT_EQ(out[0].prompt_len, 19);
  EXPECT_EQ(out[1].prompt_len, 18);
  EXPECT_EQ(out[2].prompt_len, 18);
  EXPECT_EQ(out[2].request_id, "c2");
  EXPECT_EQ(out[2].output_len, 7);
}

TEST(Sonnet, ErrorsNameTheLengths) {
  DatasetOptions o;
  o.sonnet_input_len = 13;  // == base_offset
  EXPECT_NE(error_of([&] {
              detail::sample_sonnet(kPoem, o, words_plus_bos, wrap_chat, "p");
            }).find("'input_len' must be higher than the base prompt length (13)"),
            std::string::npos);
  // Lines of 6 words (avg_len 7): num_input_lines = round((17 - 13) / 7) = 1, and base + any line is 19 > 17.
  const std::vector<std::string> long_lines = {"a b c d e f\n", "g h i j k l\n"};
  o.sonnet_input_len = 17;
  o.sonnet_prefix_len = 0;
  o.num_prompts = 2;
  const std::string e =
      error_of([&] { detail::sample_sonnet(long_lines, o, words_plus_bos, wrap_chat, "p.txt"); });
  EXPECT_NE(e.find("p.txt: after 10000 draws only 0 of 2 sonnet prompts fit --sonnet-input-len 17"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("the shortest draw was 19 tokens with 0 prefix + 1 sampled lines"), std::string::npos)
      << e;
}

// ----- burstgpt ----------------------------------------------------------------------------------------
const std::string kBurstCsv =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,GPT-4,1087,0,1087,Conversation log\n"
    "118,GPT-4,417,276,693,Conversation log\n"
    "134,GPT-4,1360,94,1454,API log\n"
    "140,ChatGPT,30,20,50,API log\n"
    "\n"
    "150,GPT-4,12,7,19,\"Conversation log\"\r\n"
    "160,GPT-4,5,3,8,API log\n"
    "170,GPT-4,9,11,20,\"API, \"\"quoted\"\" log\"\n";

TEST(BurstGpt, KeepsGpt4RowsWithResponses) {
  const auto rows = detail::load_burstgpt_rows(write_file("burst.csv", kBurstCsv));
  ASSERT_EQ(rows.size(), 5u);
  const std::vector<std::pair<int, int>> want = {{417, 276}, {1360, 94}, {12, 7}, {5, 3}, {9, 11}};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rows[i].request_tokens, want[i].first);
    EXPECT_EQ(rows[i].response_tokens, want[i].second);
  }
  EXPECT_EQ(rows[0].record, 4u);
}

TEST(BurstGpt, SamplesAsPandasDataFrameSample) {
  const auto rows = detail::load_burstgpt_rows(write_file("burst.csv", kBurstCsv));
  detail::TokenizerOps tok = testing::fake_tokenizer();
  DatasetOptions o;
  o.request_id_prefix = "b";
  auto lens = [&](int n, std::int64_t seed) {
    o.num_prompts = n;
    o.seed = seed;
    std::vector<std::pair<int, int>> v;
    for (const auto& r : detail::sample_burstgpt(rows, o, tok, "burst.csv"))
      v.emplace_back(r.prompt_len, r.output_len);
    return v;
  };
  // pandas 1.5: df.sample(n, random_state=seed) (replace=True when n > 5 rows), [Request, Response] tokens.
  using V = std::vector<std::pair<int, int>>;
  EXPECT_EQ(lens(3, 0), (V{{12, 7}, {417, 276}, {1360, 94}}));
  EXPECT_EQ(lens(5, 7), (V{{417, 276}, {5, 3}, {12, 7}, {1360, 94}, {9, 11}}));
  EXPECT_EQ(lens(8, 0), (V{{9, 11}, {417, 276}, {5, 3}, {5, 3}, {5, 3}, {1360, 94}, {5, 3}, {12, 7}}));
  EXPECT_EQ(lens(8, 3),
            (V{{12, 7}, {417, 276}, {1360, 94}, {5, 3}, {417, 276}, {417, 276}, {417, 276}, {5, 3}}));
  // The prompt of request i decodes (i + j) % vocab for j < request tokens: request 1 of seed 0, n 3 has 417
  // tokens 1..417, of which the fake tokenizer drops multiples of 7.
  o.num_prompts = 3;
  o.seed = 0;
  const auto out = detail::sample_burstgpt(rows, o, tok, "burst.csv");
  std::vector<std::int32_t> ids;
  for (int j = 0; j < 417; ++j) ids.push_back(1 + j);
  EXPECT_EQ(out[1].prompt, tok.decode(ids));
  EXPECT_EQ(out[0].prompt, "t1 t2 t3 t4 t5 t6 t8 t9 t10 t11 ");  // request 0: ids 0..11
  EXPECT_EQ(out[2].request_id, "b2");
}

TEST(BurstGpt, BrokenFilesNameTheRecord) {
  auto err = [](const std::string& text) {
    return error_of([&] { detail::load_burstgpt_rows(write_file("broken.csv", text)); });
  };
  EXPECT_NE(err("Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,x,5\n")
                .find("broken.csv: record 2: column \"Request tokens\": \"x\" is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(err("Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,3\n")
                .find("record 2: 3 fields, the header has 4"),
            std::string::npos);
  EXPECT_NE(err("Timestamp,Model,Request tokens\n1,GPT-4,3\n").find("no \"Response tokens\" column"),
            std::string::npos);
  EXPECT_NE(err("Timestamp,Model,Request tokens,Response tokens\n1,\"GPT-4,3,4\n").find("malformed CSV"),
            std::string::npos);
  detail::TokenizerOps tok = testing::fake_tokenizer();
  const auto none = detail::load_burstgpt_rows(
      write_file("none.csv", "Timestamp,Model,Request tokens,Response tokens\n1,ChatGPT,3,4\n"));
  EXPECT_NE(error_of([&] {
              detail::sample_burstgpt(none, DatasetOptions{}, tok, "none.csv");
            }).find("none.csv: no usable row"),
            std::string::npos);
}

// ----- spec_bench --------------------------------------------------------------------------------------
TEST(SpecBench, CategoryFilterAndCustomSampling) {
  const auto path =
      write_file("question.jsonl",
                 "{\"question_id\": 1, \"category\": \"writing\", \"turns\": [\"w one\", \"w two\"]}\n"
                 "{\"question_id\": 2, \"category\": \"math\", \"turns\": [\"m one\"]}\n"
                 "\n"
                 "{\"question_id\": 3, \"category\": \"writing\", \"turns\": [\"w three\"]}\n"
                 "{\"question_id\": 4, \"category\": \"coding\", \"turns\": [\"c one\"]}\n");
  const auto all = detail::load_spec_bench_rows(path, std::nullopt);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].prompt, "w one");
  EXPECT_EQ(all[3].line, 5u);
  const auto writing = detail::load_spec_bench_rows(path, std::string("writing"));
  ASSERT_EQ(writing.size(), 2u);
  EXPECT_EQ(writing[1].prompt, "w three");
  // Sampled as vLLM's CustomDataset with seed 0: Python random.seed(0); shuffle([0,1,2,3]) = [2,0,1,3].
  DatasetOptions o;
  o.num_prompts = 3;
  o.custom_output_len = 256;
  o.request_id_prefix = "q";
  const auto out = detail::sample_custom(all, o, words_plus_bos, wrap_chat, "question.jsonl");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].prompt, "<U>w three<A>");
  EXPECT_EQ(out[1].prompt, "<U>w one<A>");
  EXPECT_EQ(out[2].prompt, "<U>m one<A>");
  EXPECT_EQ(out[0].prompt_len, 3);
  EXPECT_EQ(out[2].request_id, "q2");
}

TEST(SpecBench, BrokenRowsNameTheLine) {
  auto err = [](const std::string& text, std::optional<std::string> cat = std::nullopt) {
    return error_of([&] { detail::load_spec_bench_rows(write_file("sb.jsonl", text), cat); });
  };
  EXPECT_NE(
      err("{\"turns\": [\"a\"]}\n{\"turns\": []}\n").find("sb.jsonl: line 2: spec_bench needs \"turns\""),
      std::string::npos);
  EXPECT_NE(err("{\"turns\": [\"a\"]}\nnot json\n").find("sb.jsonl: line 2: invalid JSON"),
            std::string::npos);
  EXPECT_NE(
      err("{\"turns\": [\"a\"]}\n", "math").find("line 1: --spec-bench-category is given but the row has no"),
      std::string::npos);
}

// ----- random-mm ---------------------------------------------------------------------------------------
TEST(RandomMm, ChatMessagesPutTheTextFirst) {
  SampleRequest r;
  r.prompt = "hi \"there\"";
  EXPECT_EQ(multimodal_messages_json(r), "");
  r.image_urls = {"data:image/jpeg;base64,AAAA", "data:image/jpeg;base64,BBBB"};
  EXPECT_EQ(multimodal_messages_json(r),
            R"([{"role":"user","content":[{"type":"text","text":"hi \"there\""},)"
            R"({"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAAA"}},)"
            R"({"type":"image_url","image_url":{"url":"data:image/jpeg;base64,BBBB"}}]}])");
}

TEST(RandomMm, ParsesBucketConfigAndLimits) {
  const auto b = parse_mm_bucket_config("{(256, 256, 1): 0.5, '(720, 1280, 1)': 1, (720,1280,16): 0.0,}");
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1].height, 720);
  EXPECT_EQ(b[1].width, 1280);
  EXPECT_DOUBLE_EQ(b[1].probability, 1.0);
  EXPECT_EQ(b[2].num_frames, 16);
  EXPECT_NE(error_of([] { parse_mm_bucket_config("{(256, 256): 0.5}"); }).find("--random-mm-bucket-config"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_mm_bucket_config("[1]"); }).find("expected '{'"), std::string::npos);
  const auto l = parse_mm_limit_per_prompt(R"({"image": 3, "video": 0})");
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0], (std::pair<std::string, int>{"image", 3}));
  EXPECT_NE(error_of([] { parse_mm_limit_per_prompt(R"({"image": -1})"); }).find("non-negative integer"),
            std::string::npos);
}

TEST(RandomMm, SamplingParamsAsVllm) {
  DatasetOptions o;  // vLLM defaults: base 1, ratio 0, {(256,256,1): .5, (720,1280,1): .5, (720,1280,16): 0}
  auto s = detail::mm_sampling(o);
  EXPECT_EQ(s.min_items, 1);
  EXPECT_EQ(s.max_items, 1);
  ASSERT_EQ(s.buckets.size(), 2u);  // the zero-probability video bucket is dropped
  ASSERT_EQ(s.limits.size(), 1u);   // only "image" remains
  o.random_mm_base_items_per_request = 3;
  o.random_mm_num_mm_items_range_ratio = 0.5;
  o.random_mm_limit_mm_per_prompt = {{"image", 4}, {"video", 1}};
  s = detail::mm_sampling(o);
  EXPECT_EQ(s.min_items, 1);  // floor(1.5)
  EXPECT_EQ(s.max_items, 4);  // min(4, ceil(4.5))
  o.random_mm_limit_mm_per_prompt = {{"image", 4}};
  EXPECT_NE(error_of([&] { detail::mm_sampling(o); }).find("Modality video is not in limit_mm_per_prompt"),
            std::string::npos);
  o.random_mm_bucket_config = {{8, 8, 4, 1.0}};
  o.random_mm_limit_mm_per_prompt = {{"video", 1}};
  EXPECT_NE(error_of([&] { detail::mm_sampling(o); }).find("servelab generates images only"),
            std::string::npos);
}

std::string sha256_hex(const std::string& s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  std::string out;
  for (unsigned char c : d) out += fmt::format("{:02x}", c);
  return out;
}

TEST(RandomMm, JpegIsPilsBytes) {
  // PIL 9.4 (libjpeg-turbo 2.1.5): Image.fromarray(px).save(buf, format="JPEG") of a 5x3 image with byte
  // k = (37k + 11) % 256 encodes to this 678-byte file.
  std::vector<std::uint8_t> px(45);
  for (std::size_t k = 0; k < px.size(); ++k) px[k] = static_cast<std::uint8_t>((k * 37 + 11) % 256);
  const std::string url = detail::jpeg_data_url(px, 5, 3);
  EXPECT_EQ(url.substr(0, 23), "data:image/jpeg;base64,");
  EXPECT_EQ(
      sha256_hex(url.substr(23)),
      sha256_hex(
          "/9j/4AAQSkZJRgABAQAAAQABAAD/"
          "2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4z"
          "NDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/"
          "wAARCAADAAUDASIAAhEB"
          "AxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/"
          "8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS"
          "0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5"
          "iZmqKjpKWmp6ipqrKz"
          "tLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/"
          "8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgEC"
          "BAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERU"
          "ZHSElKU1RVVldYWVpj"
          "ZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5e"
          "bn6Onq8vP09fb3+Pn6"
          "/9oADAMBAAIRAxEAPwCj4kubjRLe0/syeW08whX8pyu4LBBgfhuP5miiiumjhqNWlGdSCbaV20m9jjWJrQ92M2l6s//Z"));
  // numpy default_rng(7).integers(0, 256, (64, 48, 3), dtype=uint8) through PIL: 2457 bytes, base64 sha256
  // 046a87be...; this also checks the uint8 draws (4 bytes per 32-bit output, lowest first).
  schedule::NumpyGenerator rng(7);
  const auto noise = detail::synthetic_image_pixels(rng, 48, 64);
  EXPECT_EQ(sha256_hex(detail::jpeg_data_url(noise, 48, 64).substr(23)),
            "046a87bec836e993ecd1ee71925b04a83518e3192b782f3b01fcbdf49490453f");
}

TEST(RandomMm, MatchesNumpyOracle) {
  const auto oracle = testing::run_oracle(
      "/usr/bin/python3",
      "random_mm 3 4 6 9 2 0.5 '{\"image\": 2, \"video\": 1}' '[[2,3,1,0.3],[4,4,1,0.7],[9,9,16,0.0]]'");
  ASSERT_TRUE(oracle) << "the oracle needs Debian's /usr/bin/python3 with python3-numpy (make deps)";
  DatasetOptions o;
  o.dataset_name = "random-mm";
  o.backend = "openai-chat";
  o.seed = 3;
  o.num_prompts = 4;
  o.random_input_len = 6;
  o.random_output_len = 9;
  o.random_mm_base_items_per_request = 2;
  o.random_mm_num_mm_items_range_ratio = 0.5;
  o.random_mm_limit_mm_per_prompt = {{"image", 2}, {"video", 1}};
  o.random_mm_bucket_config = {{2, 3, 1, 0.3}, {4, 4, 1, 0.7}, {9, 9, 16, 0.0}};
  const detail::MultiModalSampling s = detail::mm_sampling(o);
  // The same draws, with the pixels kept instead of encoded.
  std::vector<std::vector<std::vector<std::uint8_t>>> pixels;
  std::vector<std::vector<std::pair<int, int>>> shapes;
  const auto out = detail::sample_random(
      o, testing::fake_tokenizer(), nullptr, [&](std::size_t, schedule::NumpyGenerator& rng, SampleRequest&) {
        pixels.emplace_back();
        shapes.emplace_back();
        detail::draw_mm_items(s, rng, [&](const MultiModalBucket& b) {
          pixels.back().push_back(detail::synthetic_image_pixels(rng, b.width, b.height));
          shapes.back().emplace_back(b.height, b.width);
        });
      });
  const auto mm = detail::sample_random_mm(o, testing::fake_tokenizer(), nullptr);
  ASSERT_EQ(out.size(), oracle->size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto& want = (*oracle)[i];
    EXPECT_EQ(out[i].prompt, want[0].get<std::string>()) << i;
    EXPECT_EQ(out[i].prompt_len, want[1].get<int>()) << i;
    EXPECT_EQ(out[i].output_len, want[2].get<int>()) << i;
    ASSERT_EQ(pixels[i].size(), want[3].size()) << i;
    ASSERT_EQ(mm[i].image_urls.size(), want[3].size()) << i;
    EXPECT_EQ(mm[i].prompt, out[i].prompt);
    for (std::size_t k = 0; k < pixels[i].size(); ++k) {
      const auto& w = want[3][k];
      EXPECT_EQ(shapes[i][k].first, w[0].get<int>());
      EXPECT_EQ(shapes[i][k].second, w[1].get<int>());
      long long sum = 0;
      for (auto v : pixels[i][k]) sum += v;
      EXPECT_EQ(sum, w[2].get<long long>()) << i << "/" << k;
      for (std::size_t b = 0; b < 8; ++b) EXPECT_EQ(pixels[i][k][b], w[3][b].get<int>()) << i << "/" << k;
      EXPECT_EQ(mm[i].image_urls[k],
                detail::jpeg_data_url(pixels[i][k], shapes[i][k].second, shapes[i][k].first));
    }
  }
  // Hand-checked counts: 1, 1, 2, 2 images of 4x4.
  EXPECT_EQ(mm[0].image_urls.size(), 1u);
  EXPECT_EQ(mm[3].image_urls.size(), 2u);
}

}  // namespace
}  // namespace servelab::dataset
