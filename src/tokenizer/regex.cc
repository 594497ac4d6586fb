#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include <stdexcept>

#include "tokenizer/utf8.h"

namespace servelab::tokenizer::detail {
namespace {

// Per-thread match state: one match-data block (the whole-match pair is all we read) and a 1 MiB JIT
// stack so that long whitespace runs or a 100 KB word never hit PCRE2's default 32 KiB JIT stack.
struct ThreadMatchState {
  pcre2_match_data* match_data = pcre2_match_data_create(16, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = [this] {
    pcre2_match_context* c = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(c, nullptr, jit_stack);
    return c;
  }();
  ~ThreadMatchState() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(match_data);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

Regex Regex::compile(const std::string& pattern, bool literal, const std::string& json_path) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  // PCRE2_LITERAL admits no PCRE2_UCP (irrelevant for a literal).
  std::uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                                   &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof message);
    throw std::runtime_error(json_path + " = \"" + pattern + "\": invalid regex at offset " +
                             std::to_string(error_offset) + ": " + reinterpret_cast<char*>(message));
  }
  Regex r;
  r.code_ = std::shared_ptr<void>(code, [](void* p) { pcre2_code_free(static_cast<pcre2_code*>(p)); });
  r.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  r.pattern_ = pattern;
  return r;
}

void Regex::find_all(std::string_view subject, std::vector<Span>& out) const {
  auto* code = static_cast<pcre2_code*>(code_.get());
  ThreadMatchState& st = thread_state();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const std::size_t n = subject.size();
  std::size_t start = 0;
  std::size_t last_match_end = SIZE_MAX;
  while (start <= n) {
    int rc = jit_ ? pcre2_jit_match(code, data, n, start, 0, st.match_data, st.context)
                  : pcre2_match(code, data, n, start, PCRE2_NO_UTF_CHECK, st.match_data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw std::runtime_error("regex \"" + pattern_ + "\" failed on a " + std::to_string(n) +
                               "-byte piece: " + reinterpret_cast<char*>(message));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.match_data);
    const std::size_t s = ov[0], e = ov[1];
    if (s == e && last_match_end == e) {
      // onig find_iter: refuse an empty match adjacent to the previous match; advance one character.
      if (start >= n) return;
      start += utf8_len(static_cast<unsigned char>(subject[start]));
      continue;
    }
    out.emplace_back(static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(e));
    last_match_end = e;
    if (e == s) {
      if (e >= n) return;
      // The next search starts at e; an empty match there is refused by the rule above.
    }
    start = e;
  }
}

}  // namespace servelab::tokenizer::detail
