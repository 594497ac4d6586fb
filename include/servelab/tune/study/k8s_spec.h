// servelab/tune: the study's [k8s] section (tune --target k8s --render DIR; see tune/k8s.h).
#pragma once

#include <map>
#include <string>

namespace servelab::tune {

/// The study's [k8s] section: what the manifests need beyond the study itself.
struct K8sSpec {
  std::string ns = "default";                   ///< metadata.namespace of every manifest ([k8s] namespace)
  std::string bench_image;                      ///< image with `servelab` on PATH (the benchmark container)
  std::map<std::string, std::string> images;    ///< study engine name -> engine image ([k8s.images])
  std::string gpu_resource = "nvidia.com/gpu";  ///< extended resource of one GPU (NVIDIA device plugin)
  std::string results_claim;      ///< PersistentVolumeClaim mounted at /results ("" = emptyDir: the
                                  ///< results live as long as the pod; the console report is in its log)
  std::string model_cache_claim;  ///< PersistentVolumeClaim mounted at /root/.cache/huggingface ("" = none)
  int shm_gb = 16;                ///< /dev/shm size for the engine (memory-backed emptyDir), GB
  std::string credentials_secret =
      "servelab-credentials";   ///< Secret holding credential variables
                                ///< (HF_TOKEN, ...: common::is_credential_name), by variable name
  int rendezvous_port = 29500;  ///< multi-node: SGLang dist-init / vLLM DP RPC / Ray GCS port on the leader
};

}  // namespace servelab::tune
