// random-mm dataset: --random-mm-* parsing, item sampling, synthetic images, JPEG data URLs (random_mm.h).
#include "dataset/random_mm.h"

#include <fmt/format.h>
#include <jpeglib.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace servelab::dataset {

namespace {

/// A tiny reader of the Python literal vLLM's --random-mm-bucket-config takes (ast.literal_eval of a dict
/// with (H, W, T) tuple keys and number values).
class LiteralReader {
 public:
  explicit LiteralReader(std::string_view text) : text_(text) {}

  [[noreturn]] void fail(std::string_view what) const {
    throw std::runtime_error(
        fmt::format("--random-mm-bucket-config {}: {} at offset {} (expected a dict such as "
                    "{{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}})",
                    text_, what, pos_));
  }
  void skip_ws() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ == text_.size();
  }
  /// A Python int or float literal (sign, digits, '.', exponent, '_' between digits).
  double number(bool integer_only) {
    skip_ws();
    const std::size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '.' || text_[pos_] == '_' ||
                                   ((text_[pos_] == '+' || text_[pos_] == '-') && pos_ > start &&
                                    (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))))
      ++pos_;
    std::string s;
    for (std::size_t i = start; i < pos_; ++i)
      if (text_[i] != '_') s += text_[i];
    if (s.empty()) fail("expected a number");
    if (integer_only && s.find_first_of(".eE") != std::string::npos)
      fail(fmt::format("'{}' is not an int", s));
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || !std::isfinite(v)) fail(fmt::format("'{}' is not a number", s));
    return v;
  }
  /// (H, W, T), possibly quoted as a string ("(256, 256, 1)").
  MultiModalBucket key() {
    skip_ws();
    if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\'')) {
      const char q = text_[pos_++];
      const std::size_t end = text_.find(q, pos_);
      if (end == std::string_view::npos) fail("unterminated string key");
      LiteralReader inner(text_.substr(pos_, end - pos_));
      MultiModalBucket b;
      try {
        b = inner.tuple();
        if (!inner.at_end()) inner.fail("trailing text in the key");
      } catch (const std::runtime_error&) {
        fail(
            fmt::format("invalid bucket key '{}'. Expected tuple (H, W, T)", text_.substr(pos_, end - pos_)));
      }
      pos_ = end + 1;
      return b;
    }
    return tuple();
  }
  MultiModalBucket tuple() {
    expect('(');
    int v[3];
    for (int i = 0; i < 3; ++i) {
      if (i) expect(',');
      const double d = number(true);
      if (d < -2147483648.0 || d > 2147483647.0) fail("bucket dimension out of range");
      v[i] = static_cast<int>(d);
    }
    if (peek(',')) ++pos_;
    expect(')');
    MultiModalBucket b;
    b.height = v[0];
    b.width = v[1];
    b.num_frames = v[2];
    return b;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<MultiModalBucket> parse_mm_bucket_config(std::string_view text) {
  LiteralReader r(text);
  std::vector<MultiModalBucket> out;
  r.expect('{');
  while (!r.peek('}')) {
    MultiModalBucket b = r.key();
    r.expect(':');
    b.probability = r.number(false);
    if (b.height < 1 || b.width < 1 || b.num_frames < 1) {
      r.fail(fmt::format(
          "invalid multimodal item configuration ({}, {}, {}): height, width and frames must be >= 1",
          b.height, b.width, b.num_frames));
    }
    auto same = [&](const MultiModalBucket& x) {
      return x.height == b.height && x.width == b.width && x.num_frames == b.num_frames;
    };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it != out.end()) {
      it->probability = b.probability;  // a Python dict keeps the first position and the last value
    } else {
      out.push_back(b);
    }
    if (!r.peek(',')) break;
    r.expect(',');
  }
  r.expect('}');
  if (!r.at_end()) r.fail("trailing text");
  return out;
}

std::vector<std::pair<std::string, int>> parse_mm_limit_per_prompt(std::string_view text) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("--random-mm-limit-mm-per-prompt {}: invalid JSON: {}", text, e.what()));
  }
  if (!j.is_object()) {
    throw std::runtime_error(fmt::format(
        "--random-mm-limit-mm-per-prompt {}: expected a JSON object such as {{\"image\": 255, \"video\": 1}}",
        text));
  }
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number_integer() || value.get<long long>() < 0 || value.get<long long>() > 0x7fffffff) {
      throw std::runtime_error(fmt::format(
          "--random-mm-limit-mm-per-prompt {}: \"{}\" must be a non-negative integer", text, key));
    }
    out.emplace_back(key, value.get<int>());
  }
  return out;
}

namespace detail {

namespace {

std::string modality_of(const MultiModalBucket& b) {
  return b.num_frames == 1 ? "image" : "video";
}

/// vLLM normalize_bucket_config: drop p == 0, divide by the (sequential) sum.
std::vector<MultiModalBucket> normalize(std::vector<MultiModalBucket> buckets) {
  for (const auto& b : buckets)
    if (b.probability < 0)
      throw std::runtime_error("--random-mm-bucket-config: Bucket config values must be non-negative.");
  std::erase_if(buckets, [](const MultiModalBucket& b) { return !(b.probability > 0); });
  if (buckets.empty()) {
    throw std::runtime_error(
        "--random-mm-bucket-config: Got invalid bucket config. Bucket config values must be non-zero.");
  }
  double total = 0;
  for (const auto& b : buckets) total += b.probability;
  for (auto& b : buckets) b.probability /= total;
  return buckets;
}

int limit_of(const std::vector<std::pair<std::string, int>>& limits, const std::string& modality) {
  for (const auto& [k, v] : limits)
    if (k == modality) return v;
  return 0;
}

}  // namespace

MultiModalSampling mm_sampling(const DatasetOptions& o) {
  const double r = o.random_mm_num_mm_items_range_ratio;
  if (!(r >= 0.0 && r <= 1.0))
    throw std::runtime_error(
        "--random-mm-num-mm-items-range-ratio: num_mm_items_range_ratio must be in [0, 1].");
  for (const auto& b : o.random_mm_bucket_config) {
    const std::string m = modality_of(b);
    const bool known =
        std::any_of(o.random_mm_limit_mm_per_prompt.begin(), o.random_mm_limit_mm_per_prompt.end(),
                    [&](const auto& kv) { return kv.first == m; });
    if (!known) {
      throw std::runtime_error(
          fmt::format("--random-mm-limit-mm-per-prompt: Modality {} is not in limit_mm_per_prompt "
                      "(bucket ({}, {}, {}) of --random-mm-bucket-config)",
                      m, b.height, b.width, b.num_frames));
    }
  }
  MultiModalSampling s;
  s.buckets = normalize(o.random_mm_bucket_config);
  for (const auto& b : s.buckets) {
    if (b.num_frames > 1) {
      throw std::runtime_error(
          fmt::format("--random-mm-bucket-config: video bucket ({}, {}, {}) has probability > 0; servelab "
                      "generates images only "
                      "(vLLM encodes videos as MP4 with OpenCV). Give video buckets probability 0",
                      b.height, b.width, b.num_frames));
    }
  }
  for (const auto& limit : o.random_mm_limit_mm_per_prompt) {
    const bool used = std::any_of(s.buckets.begin(), s.buckets.end(),
                                  [&](const auto& b) { return modality_of(b) == limit.first; });
    if (used) s.limits.push_back(limit);
  }
  if (s.limits.empty())
    throw std::runtime_error(
        "--random-mm-limit-mm-per-prompt: No valid limits for modalities present in bucket_config.");
  long long sum_limits = 0;
  for (const auto& kv : s.limits) sum_limits += kv.second;
  const int base = o.random_mm_base_items_per_request;
  s.max_items =
      static_cast<int>(std::min<long long>(sum_limits, static_cast<long long>(std::ceil(base * (1 + r)))));
  s.min_items = std::max(0, static_cast<int>(std::floor(base * (1 - r))));
  if (s.min_items > s.max_items) {
    throw std::runtime_error(fmt::format(
        "--random-mm-base-items-per-request: Min num mm items is greater than max mm items: {} > {}",
        s.min_items, s.max_items));
  }
  return s;
}

void draw_mm_items(const MultiModalSampling& s, schedule::NumpyGenerator& rng,
                   const std::function<void(const MultiModalBucket&)>& on_item) {
  const int n = static_cast<int>(rng.integers(s.min_items, s.max_items + 1LL));
  if (n == 0) return;
  std::vector<MultiModalBucket> buckets = s.buckets;
  std::vector<std::pair<std::string, int>> counter;
  for (const auto& b : buckets)
    if (std::none_of(counter.begin(), counter.end(),
                     [&](const auto& kv) { return kv.first == modality_of(b); }))
      counter.emplace_back(modality_of(b), 0);
  auto total = [&] {
    int t = 0;
    for (const auto& kv : counter) t += kv.second;
    return t;
  };
  while (total() < n) {
    // Generator.choice(a, p=p): cdf = cumsum(p) / cdf[-1]; idx = searchsorted(cdf, random(), side="right").
    std::vector<double> cdf(buckets.size());
    double acc = 0;
    for (std::size_t k = 0; k < buckets.size(); ++k) cdf[k] = acc += buckets[k].probability;
    const double last = cdf.back();
    for (double& c : cdf) c /= last;
    const double u = static_cast<double>(rng.next_u64() >> 11) * (1.0 / 9007199254740992.0);
    const std::size_t idx =
        static_cast<std::size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    const MultiModalBucket chosen = buckets[std::min(idx, buckets.size() - 1)];
    const std::string m = modality_of(chosen);
    auto& count =
        std::find_if(counter.begin(), counter.end(), [&](const auto& kv) { return kv.first == m; })->second;
    if (count < limit_of(s.limits, m)) {
      ++count;
      on_item(chosen);
      continue;
    }
    for (auto& b : buckets)
      if (modality_of(b) == m) b.probability = 0;
    if (std::all_of(buckets.begin(), buckets.end(), [](const auto& b) { return b.probability == 0; })) break;
    buckets = normalize(std::move(buckets));
  }
}

std::vector<std::uint8_t> synthetic_image_pixels(schedule::NumpyGenerator& rng, int width, int height) {
  const std::size_t count = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3;
  std::vector<std::uint8_t> px(count);
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const std::uint32_t v = rng.next_u32();
    px[i] = static_cast<std::uint8_t>(v);
    px[i + 1] = static_cast<std::uint8_t>(v >> 8);
    px[i + 2] = static_cast<std::uint8_t>(v >> 16);
    px[i + 3] = static_cast<std::uint8_t>(v >> 24);
  }
  if (i < count) {
    std::uint32_t v = rng.next_u32();
    for (; i < count; ++i, v >>= 8) px[i] = static_cast<std::uint8_t>(v);
  }
  return px;
}

namespace {

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

/// The libjpeg part, free of C++ objects with destructors (longjmp safety).
bool encode_jpeg(const std::uint8_t* rgb, int width, int height, unsigned char** out, unsigned long* out_size,
                 JpegError* err) {
  jpeg_compress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_fail;
  if (setjmp(err->jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, out, out_size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);  // quality 75, 4:2:0, Huffman tables standard (PIL: quality -1, subsampling -1)
  cinfo.smoothing_factor = 0;
  cinfo.optimize_coding = FALSE;
  jpeg_start_compress(&cinfo, FALSE);  // PIL's call (write_all_tables = FALSE; fresh tables are written)
  const std::size_t stride = static_cast<std::size_t>(width) * 3;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

std::string jpeg_data_url(const std::vector<std::uint8_t>& rgb, int width, int height) {
  if (rgb.size() != static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3)
    throw std::runtime_error("jpeg_data_url: pixel buffer size does not match width * height * 3");
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;
  JpegError err{};
  const bool ok = encode_jpeg(rgb.data(), width, height, &jpeg, &jpeg_size, &err);
  std::unique_ptr<unsigned char, decltype(&std::free)> owned(jpeg, &std::free);
  if (!ok) throw std::runtime_error(fmt::format("random-mm: JPEG encoding failed: {}", err.message));
  static constexpr std::string_view kPrefix = "data:image/jpeg;base64,";
  std::string url(kPrefix.size() + 4 * ((jpeg_size + 2) / 3) + 1, '\0');
  std::copy(kPrefix.begin(), kPrefix.end(), url.begin());
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(url.data() + kPrefix.size()), jpeg,
                                static_cast<int>(jpeg_size));
  url.resize(kPrefix.size() + static_cast<std::size_t>(n));
  return url;
}

std::vector<SampleRequest> sample_random_mm(const DatasetOptions& o, const TokenizerOps& tok,
                                            long long* token_mismatch_total) {
  const MultiModalSampling s = mm_sampling(o);
  return sample_random(
      o, tok, token_mismatch_total, [&](std::size_t, schedule::NumpyGenerator& rng, SampleRequest& r) {
        draw_mm_items(s, rng, [&](const MultiModalBucket& b) {
          const std::vector<std::uint8_t> px = synthetic_image_pixels(rng, b.width, b.height);
          r.image_urls.push_back(jpeg_data_url(px, b.width, b.height));
        });
      });
}

}  // namespace detail
}  // namespace servelab::dataset
