// servelab/dataset internals: vLLM 0.13's random multimodal dataset (RandomMultiModalDataset): random text
// as the random dataset plus synthetic RGB images, JPEG-encoded (libjpeg-turbo, PIL's settings) into base64
// data URLs. Not part of the public API (use dataset.h). The semantics are written down in docs/bench.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dataset/synthetic.h"
#include "servelab/dataset/dataset.h"
#include "servelab/schedule/rng.h"

namespace servelab::dataset::detail {

/// vLLM get_mm_item_sampling_params: item-count range and the normalized buckets / limits.
struct MultiModalSampling {
  int min_items = 0;  ///< max(0, floor(base * (1 - r)))
  int max_items = 0;  ///< min(sum of limits of the bucket modalities, ceil(base * (1 + r)))
  std::vector<std::pair<std::string, int>> limits;  ///< only modalities that have a bucket with p > 0
  std::vector<MultiModalBucket> buckets;            ///< p > 0 only, p / sum(p)
};

/// Validates and normalizes the --random-mm-* options as vLLM does (ratio in [0, 1]; every bucket's modality
/// in the limits; no negative probability; some p > 0; min <= max). servelab also refuses video buckets
/// (num_frames > 1) with p > 0: vLLM encodes them as MP4 with OpenCV, which servelab does not. Throws
/// std::runtime_error naming the flag.
MultiModalSampling mm_sampling(const DatasetOptions& options);

/// vLLM get_mm_item_iterator for one request: n = rng.integers(min, max + 1) (no draw when min == max),
/// then while fewer than n items: bucket = rng.choice(buckets, p) (one rng.random(), cdf searchsorted
/// side="right"); if its modality is under its limit, the item is taken and `on_item` called at once (vLLM
/// draws the image's pixels before the next choice); otherwise that modality's buckets get p = 0 and the
/// rest are renormalized (stop when none is left).
void draw_mm_items(const MultiModalSampling& sampling, schedule::NumpyGenerator& rng,
                   const std::function<void(const MultiModalBucket&)>& on_item);

/// vLLM generate_synthetic_image: rng.integers(0, 256, (height, width, 3), dtype=uint8) — numpy's
/// buffered_uint8 path: each 32-bit draw gives 4 bytes, lowest first; leftover bytes of the last draw are
/// dropped. Row-major RGB, height * width * 3 bytes.
std::vector<std::uint8_t> synthetic_image_pixels(schedule::NumpyGenerator& rng, int width, int height);

/// PIL `Image.fromarray(pixels).save(buf, format="JPEG")` (quality 75, 4:2:0, baseline, JFIF, no
/// optimization) through libjpeg-turbo, as base64 `data:image/jpeg;base64,...` (vLLM process_image).
/// Throws std::runtime_error when libjpeg fails.
std::string jpeg_data_url(const std::vector<std::uint8_t>& rgb, int width, int height);

/// vLLM RandomMultiModalDataset.sample: the random dataset's text (excluded ids = the special added
/// tokens, `tok.special_ids`) with each request's images drawn right after its prompt.
std::vector<SampleRequest> sample_random_mm(const DatasetOptions& options, const TokenizerOps& tok,
                                            long long* token_mismatch_total);

}  // namespace servelab::dataset::detail
