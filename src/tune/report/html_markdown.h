// servelab/tune (private to the HTML report): the Markdown report converted to HTML.
#pragma once

#include <cstddef>
#include <string>

namespace servelab::tune::html {

/// Fenced blocks longer than this many lines are folded into a <details> (bench result blocks, log
/// excerpts); shorter ones (a launch command) stay visible.
inline constexpr std::size_t kFoldLines = 3;

/// HTML of the Markdown subset render_markdown emits: headings, paragraphs, `- ` lists, pipe tables,
/// fenced code, `> ` quotes, `code` and **bold**, and its own `<details><summary>…</summary>` lines. Every
/// text is escaped; fenced blocks longer than kFoldLines lines are folded.
std::string markdown_to_html(const std::string& markdown);

}  // namespace servelab::tune::html
