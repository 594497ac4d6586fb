// servelab/common: secret redaction. Every place servelab writes text that may hold a user's credential
// (bench's Namespace line and error messages, result JSON, tune's report.md/html/csv/json and SQLite)
// passes it through these functions, so one rule decides what is a secret.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace servelab::common {

/// What a secret is replaced with.
inline constexpr std::string_view kRedacted = "<redacted>";

/// True when a header, flag, variable or key name looks like it carries a credential. Case-insensitive;
/// the name is split into words at any non-alphanumeric character and at lower→upper case changes. A name
/// is a credential when one of its words starts with "auth" (Authorization, Proxy-Authorization, X-Auth,
/// X-Auth-Token; not "author"), ends with "token" (HF_TOKEN, X-Amz-Security-Token; not "max_tokens", nor
/// "token" after a word that makes it a text token: "Inter-token", "per-token", "bos_token", "first_token"),
/// is "key" after another word (X-Api-Key, api_key, Ocp-Apim-Subscription-Key; not an identifier such as
/// config_key, trial_key, cache_key, sort_key) or a known *key compound
/// (apikey, accesskey, secretkey, privatekey, subscriptionkey), holds "secret", "password", "passwd",
/// "passphrase", "credential", "cookie", or is "pwd"/"session"/"signature".
bool is_credential_name(std::string_view name);

/// The URL with its userinfo (`user:password@`) and the values of credential-named query parameters
/// replaced: "https://u:p@h/x?api_key=s" -> "https://<redacted>@h/x?api_key=<redacted>". Other text is
/// returned unchanged.
std::string redact_url(std::string_view url);

/// One `--header` item: "KEY=VALUE" or "KEY: VALUE" (whichever separator comes first) keeps KEY and
/// redacts VALUE when KEY is a credential name; an item without separator that starts with a credential
/// name or an auth scheme ("Bearer ...") keeps only its first word.
std::string redact_header_item(std::string_view item);

/// A command line (engine launch, bench flags): values of `--header`/`-H`, of credential-named flags
/// (`--api-key X`, `--hf-token=X`), of `NAME=VALUE` / `Name: value` items with a credential NAME, and the
/// userinfo of every URL, and the values of credential-named keys of a JSON argument (`--extra-body
/// '{"api_key": "sk"}'`, `--extra-body={...}`; redact_json_text) are replaced. The vector keeps its length
/// (the flag stays, its value goes).
std::vector<std::string> redact_args(const std::vector<std::string>& args);

/// Environment of a launch: values of credential-named variables (HF_TOKEN, OPENAI_API_KEY) replaced.
std::map<std::string, std::string> redact_env(const std::map<std::string, std::string>& env);

/// Free text (error messages, logs, a study's TOML, shell lines, CSV/JSON/Markdown): URL userinfo,
/// credential-named `name=value`, `name: value`, `"name": "value"`, `name = "value"` and credential flags
/// followed by their value (`--api-key X`, `"--api-key", "X"`). A quoted value is redacted up to its closing
/// quote; an unquoted one is its next word (with a leading auth scheme such as "Bearer" kept and the word
/// after it redacted). A run of three or more dashes is a rule, not a flag: bench's result block
/// ("---------------Inter-token Latency----------------") passes unchanged. Idempotent. Does not parse the
/// text: it is a last line of defence after the structured redactions above.
std::string redact_text(std::string_view text);

/// A JSON document (an `--extra-body`, a request body) with the values of credential-named keys (any
/// depth, any type: `{"api_key": "sk"}`, `{"auth": {"token": 1}}`) replaced by kRedacted. Other values
/// are kept as they are.
nlohmann::ordered_json redact_json(const nlohmann::ordered_json& doc);

/// `text` read as JSON and passed through redact_json: returned unchanged when no key is a credential
/// (the caller's formatting kept), else the redacted document dumped compactly. Text that is not JSON goes
/// through redact_text.
std::string redact_json_text(std::string_view text);

/// The values of credential-named keys of a JSON document, at any depth: strings as they are, other
/// scalars dumped ("12345"). For redact_values.
std::vector<std::string> json_secret_values(const nlohmann::ordered_json& doc);

/// Shortest secret redact_values replaces, bytes: a shorter value would hit ordinary text.
inline constexpr std::size_t kMinSecretBytes = 4;

/// `text` (e.g. an error body a server echoed back: "Incorrect API key provided: sk-abc") with every
/// occurrence of each of `secrets` (values the caller sent: an API key, credential header values, URL
/// userinfo, credential keys of the request body) replaced by kRedacted, then through redact_text.
/// Secrets shorter than kMinSecretBytes are skipped; longer ones are replaced first.
std::string redact_values(std::string_view text, const std::vector<std::string>& secrets);

}  // namespace servelab::common
