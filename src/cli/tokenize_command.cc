// `servelab tokenize`: encode text with the server's Hugging Face tokenizer and print ids, tokens and
// counts, or encode a JSON array of strings into a JSON array of id arrays (--texts-json/--ids-json).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "cli/command_registry.h"
#include "cli/hub_fetch.h"
#include "servelab/common/paths.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::cli {
namespace {

struct TokenizeArgs {
  std::string tokenizer = "deepseek-ai/DeepSeek-V3.2";
  std::string text;
  std::string file;
  std::string texts_json;
  std::string ids_json;
  std::string revision;
  bool no_special = false;
};

void run_tokenize(const TokenizeArgs& a, bool has_text) {
  const int sources = (has_text ? 1 : 0) + (a.file.empty() ? 0 : 1) + (a.texts_json.empty() ? 0 : 1);
  if (sources != 1) {
    std::fprintf(stderr, "servelab tokenize: give exactly one of --text, --file, --texts-json\n");
    throw ExitRequest{2};
  }
  if (!a.ids_json.empty() && a.texts_json.empty()) {
    std::fprintf(stderr, "servelab tokenize: --ids-json needs --texts-json\n");
    throw ExitRequest{2};
  }
  const tokenizer::Tokenizer tok = tokenizer::load_tokenizer(a.tokenizer, hub_fetch(a.revision));
  // What the loader accepted against the reference's rules (docs/tokenizer.md: "nothing is silent").
  for (const auto& w : tok.load_warnings()) std::fprintf(stderr, "servelab tokenize: note: %s\n", w.c_str());
  const bool add_special = !a.no_special;
  if (!a.texts_json.empty()) {
    nlohmann::json texts;
    try {
      texts = nlohmann::json::parse(common::read_file(a.texts_json));
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(a.texts_json + ": invalid JSON: " + e.what());
    }
    if (!texts.is_array()) throw std::runtime_error(a.texts_json + ": must be a JSON array of strings");
    nlohmann::json out = nlohmann::json::array();
    std::size_t total_tokens = 0, total_bytes = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (!texts[i].is_string()) {
        throw std::runtime_error(a.texts_json + ": [" + std::to_string(i) + "] must be a string");
      }
      const std::string& s = texts[i].get_ref<const std::string&>();
      const auto ids = tok.encode(s, add_special);
      total_tokens += ids.size();
      total_bytes += s.size();
      out.push_back(ids);
    }
    if (!a.ids_json.empty()) {
      std::ofstream f(a.ids_json, std::ios::binary);
      f << out.dump() << '\n';
      if (!f) throw std::runtime_error("cannot write " + a.ids_json);
    }
    std::printf("texts: %zu\nbytes: %zu\ntokens: %zu\n", texts.size(), total_bytes, total_tokens);
    return;
  }
  const std::string text = has_text ? a.text : common::read_file(a.file);
  const auto ids = tok.encode(text, add_special);
  std::string line = "ids:";
  for (auto id : ids) line += " " + std::to_string(id);
  std::printf("%s\n", line.c_str());
  nlohmann::json tokens = nlohmann::json::array();
  for (auto id : ids) tokens.push_back(tok.id_to_token(id).value_or("<unknown>"));
  std::printf("tokens: %s\n", tokens.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::printf("bytes: %zu\ntokens_count: %zu\nspecial_tokens_added: %zu\n", text.size(), ids.size(),
              add_special ? tok.num_special_tokens_to_add() : std::size_t{0});
}

}  // namespace

SERVELAB_REGISTER_COMMAND("tokenize", 10, [](CLI::App& root) {
  auto args = std::make_shared<TokenizeArgs>();
  CLI::App* cmd =
      root.add_subcommand("tokenize", "Count tokens exactly as the model's Hugging Face tokenizer");
  cmd->add_option("--tokenizer", args->tokenizer,
                  "tokenizer.json file, directory, or Hugging Face id (from the local cache, else downloaded "
                  "from the Hub into it)")
      ->capture_default_str();
  cmd->add_option("--revision", args->revision,
                  "Hub revision (branch, tag or commit) of a Hub id (default: main)");
  auto* text_opt = cmd->add_option("--text", args->text, "text to encode");
  cmd->add_option("--file", args->file, "encode the whole content of this file");
  cmd->add_option("--texts-json", args->texts_json, "JSON array of strings to encode (batch)");
  cmd->add_option("--ids-json", args->ids_json, "with --texts-json: write a JSON array of id arrays here");
  cmd->add_flag("--no-special", args->no_special, "do not add the post-processor's special tokens (BOS)");
  cmd->callback([args, text_opt] { run_tokenize(*args, text_opt->count() > 0); });
});

}  // namespace servelab::cli
