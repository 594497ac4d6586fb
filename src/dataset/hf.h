// servelab/dataset internals: `--dataset-name hf` over datasets already in the local Hugging Face cache
// (hub layout datasets--ORG--NAME/snapshots/<rev>/..., JSON/JSONL files), with vLLM 0.13's dataset classes
// for the common text datasets and the row order of HF `datasets`' shuffle. Not part of the public API (use
// dataset.h). The semantics are written down in docs/bench.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/file_datasets.h"
#include "servelab/dataset/dataset.h"

namespace servelab::dataset::detail {

/// The vLLM 0.13 HuggingFaceDataset subclasses servelab implements (text only).
enum class HfKind {
  kConversation,   ///< ConversationDataset: Aeala/ShareGPT_Vicuna_unfiltered
  kInstructCoder,  ///< InstructCoderDataset: likaixin/InstructCoder
  kMtBench,        ///< MTBenchDataset: philschmid/mt-bench
  kAimo,           ///< AIMODataset: AI-MO/aimo-validation-aime, AI-MO/NuminaMath-1.5, AI-MO/NuminaMath-CoT
};

/// The class vLLM picks for a dataset id (vLLM's SUPPORTED_DATASET_PATHS), nullopt for others. Throws
/// std::runtime_error naming the id for the ids vLLM supports but servelab does not (multimodal, audio,
/// MLPerf, Zeta, Blazedit).
std::optional<HfKind> hf_kind(std::string_view dataset_id);

/// The hub caches searched for datasets--ORG--NAME, in order: $HF_HUB_CACHE, $HF_HOME/hub,
/// $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub, then $HF_DATASETS_CACHE.
std::vector<std::filesystem::path> hf_dataset_cache_dirs();

/// The snapshot folder of a dataset id: the revision refs/main names, else the only (or newest) snapshot.
/// Throws std::runtime_error listing the folders searched when the dataset is not in any cache.
std::filesystem::path find_hf_snapshot(std::string_view dataset_id);

/// The data files of `split` under `root` (a snapshot or a local folder), sorted by relative path, as HF
/// `datasets` resolves them without a README `configs:` section: data/{split}-NNNNN-of-NNNNN.* shards, else
/// split-named folders, else split keywords in file names (train/training, validation/valid/dev/val,
/// test/testing/eval/evaluation), else every data file is "train". `subset` (--hf-subset) restricts the
/// search to a folder of that name. Files starting with "." and README.md are not data. Throws
/// std::runtime_error naming the folder: no such subset folder, no such split (listing the ones found), or
/// data files that are not JSON/JSONL (naming the format: servelab reads no parquet, CSV or arrow).
std::vector<std::filesystem::path> hf_split_files(const std::filesystem::path& root,
                                                  const std::optional<std::string>& subset,
                                                  const std::string& split);

/// One row reduced to what the dataset class reads: conversation: conversations[0/1].value (usable =
/// at least 2 turns); instructcoder: input / instruction; mt-bench: turns[0]; aimo: problem / solution.
struct HfRow {
  std::string first;
  std::string second;
  bool usable = true;
};

/// Reads the rows of JSON (a top-level array) or JSONL files in order. Throws std::runtime_error (file +
/// line or record index + problem) for invalid JSON or a row missing a field the class reads.
std::vector<HfRow> load_hf_rows(const std::vector<std::filesystem::path>& files, HfKind kind);

/// The order in which vLLM iterates the rows after `load_dataset(...).shuffle(seed=seed)`:
///  - streaming (vLLM's default): the files (shards) shuffled by default_rng(seed).shuffle, then HF's
///    BufferShuffledExamplesIterable (buffer 1000, a second default_rng(seed): a full buffer yields
///    buffer[i] for i from rng.integers(0, 1000, size=1000) batches and puts the next row there; at the
///    end rng.shuffle(buffer) and the rest);
///  - --no-stream: default_rng(seed).permutation(total rows) over the files in order.
/// `rows_per_file` gives each file's row count in sorted-file order; returned: global row indices.
std::vector<std::size_t> hf_shuffled_order(const std::vector<std::size_t>& rows_per_file, std::uint64_t seed,
                                           bool streaming);

/// The vLLM 0.13 class's sample() over rows already in iteration order (see docs/bench.md for each class).
std::vector<SampleRequest> sample_hf_rows(const std::vector<const HfRow*>& rows, HfKind kind,
                                          const DatasetOptions& options, const TokenCountFn& count_tokens,
                                          const RenderChatFn& render_chat, std::string_view source);

/// --dataset-name hf end to end: locate (dataset_path as an id in the cache, or a local folder with
/// --hf-name), split (vLLM forces "train" for InstructCoder, MT-Bench and AIMO), rows, shuffle (unless
/// --disable-shuffle), sample. Throws std::runtime_error with the id, file and problem.
std::vector<SampleRequest> sample_hf(const DatasetOptions& options, const TokenCountFn& count_tokens,
                                     const RenderChatFn& render_chat);

}  // namespace servelab::dataset::detail
