#include "servelab/metrics/request_output.h"

namespace servelab::metrics {

const char* failure_kind_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone:
      return "none";
    case FailureKind::kConnect:
      return "connect";
    case FailureKind::kHttpStatus:
      return "http_status";
    case FailureKind::kSseParse:
      return "sse_parse";
    case FailureKind::kJsonParse:
      return "json_parse";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kReset:
      return "reset";
    case FailureKind::kNoValidChunk:
      return "no_valid_chunk";
    case FailureKind::kServerError:
      return "server_error";
    case FailureKind::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

}  // namespace servelab::metrics
