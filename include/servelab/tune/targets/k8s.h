// servelab/tune: `tune --target k8s --render DIR` — one Kubernetes manifest per trial of a study: a Job for
// a trial that fits one node (the engine as a native sidecar, the benchmark as the main container, so the
// Job ends when the benchmark ends), a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) for a trial whose
// layout spans nodes (engines/multinode.h renders each node's launch). Nothing is applied to a cluster:
// running against a live cluster is a later step. See docs/cluster.md.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "servelab/tune/study/k8s_spec.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

struct Study;

/// One rendered trial.
struct K8sManifest {
  std::string name;      ///< metadata.name: "<study>-<NNN>-<engine>" (DNS-1123 label, <= 52 chars)
  std::string kind;      ///< "Job" or "LeaderWorkerSet"
  int nodes = 1;         ///< pods of the trial (1 for a Job)
  int gpus_per_pod = 0;  ///< GPUs the engine container of each pod requests
  std::string yaml;      ///< the manifest (one YAML document)
  /// Keys the credentials Secret (K8sSpec::credentials_secret) must hold for this manifest: the launch's
  /// credential variables (HF_TOKEN, ...) and SERVELAB_SECRET_* for credentials of its command lines
  /// (`--api-key X`, `--header Authorization=...`), which the manifest references instead of holding them.
  std::vector<std::string> secret_keys;
};

/// The manifest of one trial (its request as the search issues it; `index` numbers it in the study).
/// Throws std::invalid_argument naming the trial when it cannot be rendered: no [k8s] bench_image or
/// image for its engine, a command whose GPU count cannot be read (engines::parse_launch_command), a
/// layout the nodes cannot hold, or a TensorRT-LLM trial over several nodes (its one MPI job needs an MPI
/// launcher across pods, e.g. the Kubeflow MPI Operator: not rendered; use --target slurm).
K8sManifest render_k8s_trial(const Study& study, const TrialRequest& trial, int index);

/// What render_k8s_study did.
struct K8sRenderResult {
  std::vector<K8sManifest> manifests;                        ///< written, in search order
  std::vector<std::pair<std::string, std::string>> skipped;  ///< trial key -> why it was not rendered
  std::set<std::string> secret_keys;                         ///< union of the manifests' secret_keys
  /// What the manifests cannot provide and the cluster must: a scenario's local file (--dataset-path, a
  /// --tokenizer file) that the benchmark container reads from its image.
  std::vector<std::string> warnings;
};

/// Renders every trial the search asks for when `planner` plays it (as `tune --dry-run` counts them; the
/// twin by default, see tune.h default_runner; pruned configs are not trials) into `dir`/<name>.yaml, one
/// manifest per file, and `dir`/trials.tsv (name, kind, nodes, GPUs per pod, config key). Creates `dir`.
/// An existing `dir` must be empty or hold only what an earlier render wrote (its trials.tsv and the
/// manifests listed there, which are replaced); anything else, a .yaml of the user's own included, is
/// refused (std::invalid_argument naming the file) and nothing is deleted.
/// A trial that cannot be rendered is listed in `skipped` with its reason.
K8sRenderResult render_k8s_study(const Study& study, const std::filesystem::path& dir, TrialRunner planner);

}  // namespace servelab::tune
