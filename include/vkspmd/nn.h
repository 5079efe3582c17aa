// Neural-network layers over the Tensor API (PyTorch's torch.nn, forward only): Module with named
// parameters, Linear, Embedding, LayerNorm, GELU, MLP, causal self-attention, a pre-LN
// transformer block, a small GPT-like language model, an MLP regressor, and the losses.
// Parameters are initialised as PyTorch does, from the seeded generator (vkspmd::manual_seed), so
// a seed gives the same weights on any mesh. Sharding strategies are in vkspmd/parallel.h.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vkspmd/mesh.h"
#include "vkspmd/tensor.h"

namespace vkspmd::nn {

// Where a strategy (vkspmd/parallel.h) puts a model: its mesh and the roles of the mesh axes.
// An empty name means the role is not used.
struct ParallelPlan {
  std::string strategy;    // "dp", "tp", "dp+tp" or "fsdp", for messages.
  Mesh mesh;               // Every parameter and activation lives on it.
  std::string data_axis;   // The batch dim of inputs and activations is split over it.
  std::string model_axis;  // Megatron tensor parallelism: heads, MLP hidden units, vocabulary.
  std::string fsdp_axis;   // Every parameter's largest dim is split over it.
  // Whether layers constrain their activations (Module::constrain) to the roles above. False for
  // parallelize_module's data axis: only the inputs are placed, propagation does the rest.
  bool constrain_activations = true;

  // The number of devices along `axis` (1 for "").
  int64_t axis_size(const std::string& axis) const;
};

// The activations a layer constrains when a plan is set. Batch-first in every case.
enum class Activation {
  kBatch,     // [B, ...]: only the batch dim split (the residual stream, layer inputs).
  kHeads,     // [B, heads, T, head_dim]: heads split over the model axis too.
  kFeatures,  // [B, ..., F]: the last dim split over the model axis too (MLP hidden, logits).
};

// One parameter: its dotted name, the handle (sharing state with the module's own, so
// assign() through it updates the module), and the dim Megatron tensor parallelism splits over
// the model axis (-1: replicated).
struct NamedParameter {
  std::string name;
  Tensor tensor;
  int64_t tensor_parallel_dim = -1;
};

// The base of every layer. Modules register their parameters and children in construction
// order, which fixes the order of named_parameters() and of the random initialisation. Modules
// are neither copied nor moved (children are registered by address); hold big ones by pointer.
class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // (dotted name, tensor) in registration order, children after their parent's own parameters,
  // e.g. "blocks.0.attention.query.weight".
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<NamedParameter> parameter_table() const;
  // The number of parameter elements.
  int64_t parameter_count() const;
  // (dotted name, module) of every descendant, parents before their children ("mlp",
  // "mlp.fc1", ...), as PyTorch's named_modules without the module itself.
  std::vector<std::pair<std::string, Module*>> named_modules() const;

  // Every parameter as `directory/<dotted name>.npy` (the directory is created), and back: load
  // assigns each parameter the file of its name (keeping its identity and sharding); a missing
  // file or a shape or type that differs throws, naming the parameter.
  void save_npy(const std::string& directory) const;
  void load_npy(const std::string& directory);
  // Every parameter, gathered, as the tensor of its dotted name in one safetensors file (Hugging
  // Face's format; `path` is replaced only once the whole file is on disk), and back: load checks
  // every name, shape and type before it assigns any parameter (keeping its identity and
  // sharding). A name the file lacks, or a shape or type that differs, throws naming the
  // parameter and the file; with `strict`, so do tensors of the file that are not parameters (as
  // PyTorch's load_state_dict(strict=True)).
  void save_safetensors(const std::string& path) const;
  void load_safetensors(const std::string& path, bool strict = true);

  // The plan of a strategy, for this module and its children (nullptr: no sharding, the model
  // runs wherever its tensors are). Strategies set it; a model reads it in forward. Throws, and
  // changes nothing, when a module cannot run under the plan.
  void set_parallel_plan(std::shared_ptr<const ParallelPlan> plan);
  const std::shared_ptr<const ParallelPlan>& parallel_plan() const { return plan_; }

  // For modules assembled at run time (a Python subclass of vkspmd.nn.Module, PyTorch's
  // register_parameter / add_module): `value` becomes parameter `name`, its handle kept by this
  // module, so named_parameters(), optimizers, grad and the strategies see it. Registering a
  // name again replaces the entry in place (keeping its position). A name with '.', an empty
  // name, or one already naming a child (a parameter, for add_module) throws.
  void add_parameter(const std::string& name, const Tensor& value);
  // `child` becomes submodule `name`; the caller keeps it alive as long as this module.
  void add_module(const std::string& name, Module* child);

  // Mixed precision, as PyTorch's autocast with float32 master weights: the parameters (and so
  // the optimizer state) stay float32; with compute dtype float16 or bfloat16, Linear layers (and
  // attention's two batched matmuls) cast their input, weight and bias to it and compute in it,
  // GELU computes in what it is given, while LayerNorm, softmax and the losses compute in
  // float32 (autocast's float32 list), so the residual stream stays float32. Gradients return to
  // float32 through the converts (a convert's gradient is the convert back). Set for this module
  // and its children; float32 (the default) leaves every graph as it was. Throws for a dtype
  // that is not floating-point. float16 needs loss scaling (optim::GradScaler).
  void set_compute_dtype(DType dtype);
  DType compute_dtype() const { return compute_dtype_; }

  // Marks `x` (batch-first) with the plan's sharding for `kind`; without a plan returns `x`.
  Tensor constrain(const Tensor& x, Activation kind) const;
  // Places a model input (tokens, features, targets) on the plan's mesh, its dim 0 split over
  // the data axis. Throws when that dim is not divisible by the data axis size (no padding).
  Tensor shard_input(const Tensor& x) const;

  // One side of a module's forward as a parallel style lays it out over one mesh axis
  // (PyTorch's input_layouts / output_layouts): tensor dim `dim` (negative counts from the end)
  // split over the axis, or the tensor replicated over it.
  struct AxisLayout {
    bool replicate = false;
    int64_t dim = 0;
  };
  // Linear, Embedding and LayerNorm constrain their forward input to `input` and their output to
  // `output` over mesh axis `axis` (nullopt: left to sharding propagation); under a plan with a
  // data axis (set_parallel_plan) dim 0 stays split over that axis too. `style` names the setter
  // in errors. parallelize_module calls it.
  void set_layouts(const Mesh& mesh, int64_t axis, std::optional<AxisLayout> input,
                   std::optional<AxisLayout> output, std::string style);
  // PyTorch's SequenceParallel, as parallelize_module sets it: forward takes its input with dim
  // `dim` (the sequence) split over mesh axis `axis` and returns its output split the same way,
  // so a LayerNorm between Rowwise and Colwise layers runs on a slice of the sequence. The dim
  // must come before the last (feature) dim of the input.
  void set_sequence_parallel(const Mesh& mesh, int64_t axis, int64_t dim = 1);
  // `x` constrained as set_layouts says for the input / the output (unchanged when not set).
  // Throws when `x` has no such dim.
  Tensor layout_input(const Tensor& x) const;
  Tensor layout_output(const Tensor& x) const;

 protected:
  // `tensor` must be a member of the derived module (registered by address).
  void register_parameter(const std::string& name, Tensor* tensor,
                          int64_t tensor_parallel_dim = -1);
  void register_module(const std::string& name, Module* child);
  // Throws when this module (not its children) cannot run under `plan`.
  virtual void check_parallel_plan(const ParallelPlan& plan) const { (void)plan; }
  // A floating-point `x` in the compute dtype (unchanged under float32, and for other types).
  Tensor to_compute_dtype(const Tensor& x) const;

 private:
  struct ParameterSlot {
    std::string name;
    Tensor* tensor;
    int64_t tensor_parallel_dim;
  };
  void CollectParameters(const std::string& prefix, std::vector<NamedParameter>& out) const;
  void CheckPlanRecursively(const ParallelPlan& plan) const;
  void SetPlanRecursively(const std::shared_ptr<const ParallelPlan>& plan);

  void CheckNewName(const std::string& name, bool parameter) const;

  std::vector<ParameterSlot> parameters_;
  // The handles add_parameter keeps (a deque: registered addresses stay valid).
  std::deque<Tensor> owned_parameters_;
  std::vector<std::pair<std::string, Module*>> children_;
  std::shared_ptr<const ParallelPlan> plan_;
  struct Layouts {
    Mesh mesh;
    int64_t axis;
    std::optional<AxisLayout> input, output;
    std::string style;
    bool sequence = false;  // SequenceParallel: the split dim may not be the feature dim.
  };
  Tensor Constrain(const Tensor& x, const std::optional<AxisLayout>& layout,
                   const char* side) const;
  // `x` marked with the plan's sharding for `kind` (the plan must be set).
  Tensor Constrain(const Tensor& x, Activation kind) const;
  std::optional<Layouts> layouts_;
  DType compute_dtype_ = float32;
};

// How tensor parallelism splits a Linear (Megatron): column-parallel splits the output features
// (weight dim 0, bias), row-parallel the input features (weight dim 1; the bias is replicated and
// added after the partial sums are reduced).
enum class LinearSplit { kReplicated, kColumn, kRow };

// y = x W^T + b, W stored [out, in] as in PyTorch. W and b ~ U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's
// kaiming_uniform_(a=sqrt(5)) for W reduces to this bound), drawn W first, then b.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true,
         LinearSplit split = LinearSplit::kReplicated);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // Undefined without a bias.
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

 private:
  int64_t in_features_, out_features_;
  Tensor weight_, bias_;
};

// A lookup table [num_embeddings, dim] ~ N(0, 1) (PyTorch's default). With vocab_parallel,
// tensor parallelism splits the table's rows (the vocabulary) over the model axis.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, bool vocab_parallel = false);
  // int32 indices of any shape → [..., dim]; an index outside the table gives a zero row.
  Tensor forward(const Tensor& indices) const;
  Tensor operator()(const Tensor& indices) const { return forward(indices); }
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

// Normalises the last dim; weight 1 and bias 0 initially (PyTorch's elementwise_affine).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  int64_t dim_;
  double eps_;
  Tensor weight_, bias_;
};

// The exact GELU, x Φ(x) = 0.5 x (1 + erf(x / sqrt(2))) (PyTorch's default approximate="none").
class GELU : public Module {
 public:
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
};

// Linear(in, hidden) → GELU → Linear(hidden, out): "fc1" column-parallel, "fc2" row-parallel, so
// under tensor parallelism the hidden activation stays split and one all-reduce ends the block.
class MLP : public Module {
 public:
  MLP(int64_t in_features, int64_t hidden_features, int64_t out_features);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  const Linear& fc1() const { return fc1_; }
  const Linear& fc2() const { return fc2_; }

 private:
  Linear fc1_, fc2_;
  GELU gelu_;
};

// Causal multi-head self-attention on [B, T, d_model]: "query", "key", "value" projections
// (column-parallel: heads split over the model axis), softmax(q k^T / sqrt(head_dim)) with
// future positions masked to -inf, and the "output" projection (row-parallel). Throws when
// d_model is not divisible by heads.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t d_model, int64_t heads);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  int64_t heads() const { return heads_; }

 protected:
  // Tensor parallelism splits whole heads: the model axis must divide them.
  void check_parallel_plan(const ParallelPlan& plan) const override;

 private:
  Tensor SplitHeads(const Tensor& x) const;

  int64_t d_model_, heads_;
  Linear query_, key_, value_, output_;
};

// Pre-LN block: x + attention(ln1(x)), then x + mlp(ln2(x)), the MLP 4 d_model wide.
class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t d_model, int64_t heads);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

 private:
  LayerNorm ln1_;
  CausalSelfAttention attention_;
  LayerNorm ln2_;
  MLP mlp_;
};

// The sizes of a TransformerLM; max_seq is the length of the learned position table.
struct TransformerConfig {
  int64_t vocab = 64;
  int64_t d_model = 32;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t max_seq = 32;
};

// A small GPT: token embedding "token_embedding" (vocab-parallel) + learned position embedding
// "position_embedding" (replicated under tensor parallelism), blocks "blocks.<i>", final
// LayerNorm "ln_f" and the LM head "head" (Linear(d_model, vocab) without bias,
// column-parallel: logits split over the vocabulary). Parameters are drawn in that order.
class TransformerLM : public Module {
 public:
  explicit TransformerLM(const TransformerConfig& config);
  // int32 tokens [B, T] (T <= max_seq) → logits [B, T, vocab].
  Tensor forward(const Tensor& tokens) const;
  Tensor operator()(const Tensor& tokens) const { return forward(tokens); }
  // The mean cross-entropy of forward(tokens) against int32 targets [B, T].
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;
  const TransformerConfig& config() const { return config_; }

 private:
  TransformerConfig config_;
  Embedding token_embedding_, position_embedding_;
  std::vector<std::unique_ptr<TransformerBlock>> blocks_;
  LayerNorm ln_f_;
  Linear head_;
};

// The model of the synthetic regression task: Linear(in, hidden) → GELU → Linear(hidden, out)
// (an MLP named "mlp"), trained with the mean squared error.
class MlpRegressor : public Module {
 public:
  MlpRegressor(int64_t in_features, int64_t hidden_features, int64_t out_features);
  // x [B, in] → [B, out].
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // mse_loss(forward(x), y).
  Tensor loss(const Tensor& x, const Tensor& y) const;

 private:
  MLP mlp_;
};

// Mean cross-entropy of logits [B, T, V] or [N, V] against int32 class indices [B, T] or [N].
// Both losses compute in float32 whatever the prediction's floating type.
Tensor cross_entropy_loss(const Tensor& logits, const Tensor& targets);
// The mean of (prediction - target)^2 over every element.
Tensor mse_loss(const Tensor& prediction, const Tensor& target);

}  // namespace vkspmd::nn
