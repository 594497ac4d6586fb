// The Markdown report as HTML (html_markdown.h): the subset render_markdown emits, with the raw bench
// blocks and engine-log excerpts folded into <details>.
#include "tune/report/html_markdown.h"

#include <fmt/format.h>

#include <sstream>

#include "tune/report/html_charts.h"

namespace servelab::tune::html {

namespace {

/// The length of the HTML character reference (&lt; &gt; &amp; &quot; &#39;, which the Markdown's own
/// escaping writes) at `s[i]`, else 0.
size_t entity_at(const std::string& s, size_t i) {
  for (const char* e : {"&lt;", "&gt;", "&amp;", "&quot;", "&#39;"})
    if (s.compare(i, std::char_traits<char>::length(e), e) == 0) return std::char_traits<char>::length(e);
  return 0;
}

/// Inline markup: `code`, **bold**; a character reference outside code is kept (a Markdown viewer decodes
/// it: the goal's "<script>" is written "&lt;script&gt;" and shown as typed, not as "&lt;script&gt;");
/// everything else escaped.
std::string inline_md(const std::string& s) {
  std::string o;
  bool code = false, bold = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (const size_t n = code ? 0 : entity_at(s, i); n > 0) {
      o += s.substr(i, n);
      i += n - 1;
    } else if (s[i] == '`') {
      o += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && s.compare(i, 2, "**") == 0) {
      o += bold ? "</b>" : "<b>";
      bold = !bold;
      ++i;
    } else if (!code && s.compare(i, 2, "\\|") == 0) {
      o += "|";
      ++i;
    } else {
      o += esc(std::string(1, s[i]));
    }
  }
  if (code) o += "</code>";
  if (bold) o += "</b>";
  return o;
}

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += "\\|";
      ++i;
    } else if (line[i] == '|') {
      size_t a = cur.find_first_not_of(' '), b = cur.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cur.substr(a, b - a + 1));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

/// A fenced block: short ones (a launch command) stay visible; longer ones (a bench result block) are
/// folded unless the Markdown already put them in a <details>.
void code_block(std::ostringstream& h, const std::vector<std::string>& lines, bool inside_details) {
  std::string body;
  for (const auto& l : lines) body += esc(l) + "\n";
  if (inside_details || lines.size() <= kFoldLines) {
    h << "<pre>" << body << "</pre>\n";
    return;
  }
  bool bench = false;
  for (const auto& l : lines) bench = bench || l.find("Serving Benchmark Result") != std::string::npos;
  h << "<details class=\"raw\"><summary>" << (bench ? "bench result block" : "output") << " (" << lines.size()
    << " lines)</summary><pre>" << body << "</pre></details>\n";
}

}  // namespace

std::string markdown_to_html(const std::string& md) {
  std::istringstream in(md);
  std::ostringstream h;
  std::string line;
  bool in_code = false, in_table = false, in_list = false, table_head = false, in_details = false;
  std::vector<std::string> code;
  auto close_blocks = [&] {
    if (in_table) h << "</table>\n";
    if (in_list) h << "</ul>\n";
    in_table = in_list = false;
  };
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (!in_code) {
        close_blocks();
        code.clear();
      } else {
        code_block(h, code, in_details);
      }
      in_code = !in_code;
      continue;
    }
    if (in_code) {
      code.push_back(line);
      continue;
    }
    if (line.rfind("|", 0) == 0) {
      if (line.rfind("|---", 0) == 0) continue;
      if (!in_table) {
        close_blocks();
        h << "<table>\n";
        in_table = table_head = true;
      }
      h << "<tr>";
      for (const auto& c : split_row(line))
        h << (table_head ? "<th>" : "<td>") << inline_md(c) << (table_head ? "</th>" : "</td>");
      h << "</tr>\n";
      table_head = false;
      continue;
    }
    if (line.rfind("- ", 0) == 0) {
      if (!in_list) {
        close_blocks();
        h << "<ul>\n";
        in_list = true;
      }
      h << "<li>" << inline_md(line.substr(2)) << "</li>\n";
      continue;
    }
    close_blocks();
    if (line.empty()) continue;
    int level = 0;
    while (level < static_cast<int>(line.size()) && line[level] == '#') ++level;
    if (level > 0 && level < 7 && line.size() > static_cast<size_t>(level) && line[level] == ' ') {
      h << fmt::format("<h{0}>{1}</h{0}>\n", level, inline_md(line.substr(level + 1)));
    } else if (line.rfind("> ", 0) == 0) {
      h << "<blockquote>" << inline_md(line.substr(2)) << "</blockquote>\n";
    } else if (line.rfind("<details>", 0) == 0) {
      // emitted by render_markdown itself: "<details><summary>TEXT</summary>"
      const std::string open = "<details><summary>", close = "</summary>";
      const size_t a = line.find(open), b = line.rfind(close);
      h << "<details>";
      if (a == 0 && b != std::string::npos && b >= open.size())
        h << "<summary>" << esc(line.substr(open.size(), b - open.size())) << "</summary>";
      h << "\n";
      in_details = true;
    } else if (line.rfind("</details>", 0) == 0) {
      h << "</details>\n";
      in_details = false;
    } else {
      h << "<p>" << inline_md(line) << "</p>\n";
    }
  }
  close_blocks();
  if (in_code) code_block(h, code, in_details);
  return h.str();
}

}  // namespace servelab::tune::html
