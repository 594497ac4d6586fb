// servelab/chat: DeepSeek-V3.2's chat encoding (prompt rendering) and completion parsing.
// DeepSeek-V3.2 ships no Jinja template; its official encoder is `encoding/encoding_dsv32.py` in the
// model's Hugging Face repository (vLLM: --tokenizer-mode deepseek_v32; SGLang:
// tool_chat_template_deepseekv32.jinja). This module follows the format facts written down in
// shared/reference/deepseek-v32-chat-encoding.md. The plain-chat path (system/user/assistant text, no
// tools) is exact; the wording of the "## Tools" / "## Response Format" sections is ours (the reference
// gives their structure, not their text), so prompts that carry tools are counted approximately — the
// functions that render them say so.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::chat {

/// Special strings of the DeepSeek-V3.x format (U+FF5C full-width bar, U+2581 lower one-eighth block).
inline constexpr std::string_view kBos =
    "<\xEF\xBD\x9C"
    "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
inline constexpr std::string_view kEos =
    "<\xEF\xBD\x9C"
    "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
inline constexpr std::string_view kUser = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
inline constexpr std::string_view kAssistant =
    "<\xEF\xBD\x9C"
    "Assistant\xEF\xBD\x9C>";
inline constexpr std::string_view kThinkOpen = "<think>";
inline constexpr std::string_view kThinkClose = "</think>";
/// "｜DSML｜" — the marker inside tool-call tags.
inline constexpr std::string_view kDsml =
    "\xEF\xBD\x9C"
    "DSML\xEF\xBD\x9C";

/// One function call made by the assistant. `arguments_json` is a JSON object text.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;
};

/// One chat message, as in the OpenAI API. `role` is system|developer|user|assistant|tool.
struct Message {
  std::string role;
  std::string content;
  std::string reasoning_content;     ///< assistant only
  std::vector<ToolCall> tool_calls;  ///< assistant only
  std::string tool_call_id;          ///< tool only
};

/// Options of one rendering.
struct RenderOptions {
  bool thinking = false;                ///< thinking mode (chat_template_kwargs {"thinking": true})
  bool add_bos = true;                  ///< start with BOS (false when continuing a context)
  std::vector<std::string> tools_json;  ///< one JSON schema object text per tool (may be empty)
  std::string response_format_json;     ///< JSON schema text of response_format (may be empty)
};

/// Renders `messages` to the prompt string the engine tokenizes (without add_special_tokens: BOS is part
/// of the text when `add_bos`). A conversation ending with a user (or tool) message ends with the
/// generation prompt (`<｜Assistant｜>` then `<think>` or `</think>`). For plain prompts:
/// `BOS <｜User｜>{prompt}<｜Assistant｜></think>`.
/// Throws std::invalid_argument for an unknown role or a tool message that follows no assistant call.
std::string render_deepseek_v32(const std::vector<Message>& messages, const RenderOptions& options = {});

/// A completion split as a reasoning parser plus a tool-call parser would split it.
struct ParsedCompletion {
  std::string reasoning_content;     ///< text before `</think>` (thinking mode only)
  std::string content;               ///< text after it, up to EOS or the DSML block
  std::vector<ToolCall> tool_calls;  ///< parsed from `<｜DSML｜function_calls>`; ids "call_<k>"
  bool finished_with_eos = false;    ///< EOS was found (the text after it is dropped)
};

/// Parses generated text. With `thinking`, text up to the first `</think>` is reasoning (all of it when
/// `</think>` never comes). Throws std::invalid_argument naming the problem for a malformed DSML block
/// (unterminated tag, missing name attribute).
ParsedCompletion parse_deepseek_v32(std::string_view text, bool thinking);

}  // namespace servelab::chat
