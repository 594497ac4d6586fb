// DeepSeek-V3.2 chat encoding and completion parsing. See chat.h for the scope and sources.
#include <nlohmann/json.hpp>

#include <stdexcept>

#include "servelab/chat/chat.h"

namespace servelab::chat {
namespace {

// The "## Tools" and "## Response Format" sections. Structure per the reference (a blank line, a heading,
// an explanation of the DSML call format, one JSON schema per line inside <functions>…</functions>); the
// explanatory wording is ours, so counts of prompts with tools are approximate.
std::string tools_section(const RenderOptions& o) {
  std::string s;
  if (!o.tools_json.empty()) {
    s += "## Tools\n";
    s += "You have access to the following functions. To call functions, write a block that starts with "
         "<";
    s += kDsml;
    s += "function_calls>, holds one <";
    s += kDsml;
    s += "invoke name=\"...\"> per call with one <";
    s += kDsml;
    s += "parameter name=\"...\" string=\"true|false\"> per argument, and ends with </";
    s += kDsml;
    s += "function_calls>.\n\n<functions>\n";
    for (const auto& t : o.tools_json) {
      s += t;
      s += '\n';
    }
    s += "</functions>";
  }
  if (!o.response_format_json.empty()) {
    if (!s.empty()) s += "\n\n";
    s += "## Response Format\nRespond with a JSON object that matches this JSON schema:\n";
    s += o.response_format_json;
  }
  return s;
}

void append_tool_calls(std::string& out, const std::vector<ToolCall>& calls) {
  if (calls.empty()) return;
  out += "\n\n<";
  out += kDsml;
  out += "function_calls>\n";
  for (const auto& c : calls) {
    out += "<";
    out += kDsml;
    out += "invoke name=\"" + c.name + "\">\n";
    nlohmann::ordered_json args;
    try {
      args = c.arguments_json.empty() ? nlohmann::ordered_json::object()
                                      : nlohmann::ordered_json::parse(c.arguments_json);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument("tool call '" + c.name + "': arguments are not valid JSON: " + e.what());
    }
    if (!args.is_object()) {
      throw std::invalid_argument("tool call '" + c.name + "': arguments must be a JSON object");
    }
    for (const auto& [key, value] : args.items()) {
      const bool is_string = value.is_string();
      out += "<";
      out += kDsml;
      out += "parameter name=\"" + key + "\" string=\"" + (is_string ? "true" : "false") + "\">";
      out += is_string ? value.get<std::string>() : value.dump();
      out += "</";
      out += kDsml;
      out += "parameter>\n";
    }
    out += "</";
    out += kDsml;
    out += "invoke>\n";
  }
  out += "</";
  out += kDsml;
  out += "function_calls>";
}

}  // namespace

std::string render_deepseek_v32(const std::vector<Message>& messages, const RenderOptions& options) {
  std::string out;
  if (options.add_bos) out += kBos;
  const std::string tools = tools_section(options);
  std::size_t last_user = messages.size();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (messages[i].role == "user" || messages[i].role == "developer") last_user = i;
  }
  bool tools_emitted = false;
  bool open_results = false;  // inside a <function_results> block
  auto close_results = [&](std::size_t next_index) {
    if (!open_results) return;
    out += "\n</function_results>";
    const bool thinking_here = options.thinking && next_index > last_user;
    out += thinking_here ? "\n\n<think>" : "\n\n</think>";
    open_results = false;
  };
  bool any_system = false;
  for (const auto& m : messages) any_system = any_system || m.role == "system";
  if (!any_system && !tools.empty() && last_user < messages.size() &&
      messages[last_user].role != "developer") {
    out += tools;  // tools without a system message: the sections stand where the system prompt would
    tools_emitted = true;
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.role != "tool") close_results(i);
    if (m.role == "system") {
      out += m.content;
      if (!tools.empty() && !tools_emitted) {
        out += "\n\n" + tools;
        tools_emitted = true;
      }
    } else if (m.role == "user" || m.role == "developer") {
      out += kUser;
      if (m.role == "developer") {
        if (!tools.empty()) out += tools + "\n\n";
        out += "# The user's message is: " + m.content;
      } else {
        out += m.content;
      }
      out += kAssistant;
      out += (options.thinking && i == last_user) ? kThinkOpen : kThinkClose;
    } else if (m.role == "assistant") {
      if (options.thinking && i > last_user) {
        out += m.reasoning_content;
        out += kThinkClose;
      }
      out += m.content;
      append_tool_calls(out, m.tool_calls);
      out += kEos;
    } else if (m.role == "tool") {
      if (!open_results) {
        if (i == 0 || (messages[i - 1].role != "assistant" && messages[i - 1].role != "tool")) {
          throw std::invalid_argument("messages[" + std::to_string(i) +
                                      "]: a tool message must follow an assistant message with tool_calls");
        }
        out += "\n\n<function_results>";
        open_results = true;
      }
      out += "\n<result>" + m.content + "</result>";
    } else {
      throw std::invalid_argument("messages[" + std::to_string(i) + "].role = \"" + m.role +
                                  "\" is not one of system, developer, user, assistant, tool");
    }
  }
  close_results(messages.size());
  return out;
}

namespace {
// Reads the value of attribute `name="..."` inside a tag body; nullopt if absent.
std::optional<std::string> attribute(std::string_view tag, std::string_view name) {
  const std::string key = std::string(name) + "=\"";
  const auto p = tag.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  const auto start = p + key.size();
  const auto end = tag.find('"', start);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(tag.substr(start, end - start));
}

std::vector<ToolCall> parse_dsml(std::string_view block) {
  const std::string invoke_open = "<" + std::string(kDsml) + "invoke";
  const std::string invoke_close = "</" + std::string(kDsml) + "invoke>";
  const std::string param_open = "<" + std::string(kDsml) + "parameter";
  const std::string param_close = "</" + std::string(kDsml) + "parameter>";
  std::vector<ToolCall> calls;
  std::size_t pos = 0;
  while ((pos = block.find(invoke_open, pos)) != std::string_view::npos) {
    const auto tag_end = block.find('>', pos);
    const auto end = block.find(invoke_close, pos);
    if (tag_end == std::string_view::npos || end == std::string_view::npos) {
      throw std::invalid_argument("DSML: unterminated invoke tag in tool-call block");
    }
    const auto name = attribute(block.substr(pos, tag_end - pos), "name");
    if (!name) throw std::invalid_argument("DSML: invoke tag without a name attribute");
    nlohmann::ordered_json args = nlohmann::ordered_json::object();
    std::string_view body = block.substr(tag_end + 1, end - tag_end - 1);
    std::size_t q = 0;
    while ((q = body.find(param_open, q)) != std::string_view::npos) {
      const auto ptag_end = body.find('>', q);
      const auto pend = body.find(param_close, q);
      if (ptag_end == std::string_view::npos || pend == std::string_view::npos) {
        throw std::invalid_argument("DSML: unterminated parameter tag in invoke '" + *name + "'");
      }
      const auto tag = body.substr(q, ptag_end - q);
      const auto pname = attribute(tag, "name");
      if (!pname) throw std::invalid_argument("DSML: parameter without a name in invoke '" + *name + "'");
      const std::string value(body.substr(ptag_end + 1, pend - ptag_end - 1));
      if (attribute(tag, "string").value_or("true") == "true") {
        args[*pname] = value;
      } else {
        try {
          args[*pname] = nlohmann::ordered_json::parse(value);
        } catch (const nlohmann::json::exception&) {
          args[*pname] = value;  // the model wrote a non-JSON value with string="false": keep its text
        }
      }
      q = pend + param_close.size();
    }
    calls.push_back({"call_" + std::to_string(calls.size()), *name, args.dump()});
    pos = end + invoke_close.size();
  }
  return calls;
}
}  // namespace

ParsedCompletion parse_deepseek_v32(std::string_view text, bool thinking) {
  ParsedCompletion r;
  if (const auto e = text.find(kEos); e != std::string_view::npos) {
    text = text.substr(0, e);
    r.finished_with_eos = true;
  }
  if (thinking) {
    const auto t = text.find(kThinkClose);
    if (t == std::string_view::npos) {
      r.reasoning_content = std::string(text);
      return r;
    }
    r.reasoning_content = std::string(text.substr(0, t));
    text = text.substr(t + kThinkClose.size());
  }
  const std::string calls_marker = "\n\n<" + std::string(kDsml) + "function_calls";
  if (const auto c = text.find(calls_marker); c != std::string_view::npos) {
    r.content = std::string(text.substr(0, c));
    r.tool_calls = parse_dsml(text.substr(c));
  } else {
    r.content = std::string(text);
  }
  return r;
}

}  // namespace servelab::chat
