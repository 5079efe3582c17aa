// The pre-LN transformer block and the small GPT-like language model.
#include "absl/strings/str_cat.h"
#include "src/nn/init.h"
#include "vkspmd/nn.h"
#include "vkspmd/ops.h"

namespace vkspmd::nn {
namespace {

std::vector<std::unique_ptr<TransformerBlock>> MakeBlocks(const TransformerConfig& config) {
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  for (int64_t i = 0; i < config.layers; ++i) {
    blocks.push_back(std::make_unique<TransformerBlock>(config.d_model, config.heads));
  }
  return blocks;
}

}  // namespace

TransformerBlock::TransformerBlock(int64_t d_model, int64_t heads)
    : ln1_(d_model),
      attention_(d_model, heads),
      ln2_(d_model),
      mlp_(d_model, 4 * d_model, d_model) {
  register_module("ln1", &ln1_);
  register_module("attention", &attention_);
  register_module("ln2", &ln2_);
  register_module("mlp", &mlp_);
}

Tensor TransformerBlock::forward(const Tensor& x) const {
  Tensor h = constrain(x + attention_(ln1_(x)), Activation::kBatch);
  return constrain(h + mlp_(ln2_(h)), Activation::kBatch);
}

TransformerLM::TransformerLM(const TransformerConfig& config)
    : config_(config),
      token_embedding_(config.vocab, config.d_model, /*vocab_parallel=*/true),
      position_embedding_(config.max_seq, config.d_model),
      blocks_(MakeBlocks(config)),
      ln_f_(config.d_model),
      head_(config.d_model, config.vocab, /*bias=*/false, LinearSplit::kColumn) {
  RequirePositive({config.vocab, config.d_model, config.heads, config.layers, config.max_seq},
                  "TransformerLM");
  register_module("token_embedding", &token_embedding_);
  register_module("position_embedding", &position_embedding_);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    register_module(absl::StrCat("blocks.", i), blocks_[i].get());
  }
  register_module("ln_f", &ln_f_);
  register_module("head", &head_);
}

Tensor TransformerLM::forward(const Tensor& tokens) const {
  if (tokens.dim() != 2 || tokens.dtype() != DType::kInt32 || tokens.size(1) > config_.max_seq) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("TransformerLM: tokens must be int32 [B, T] with T <= max_seq ",
                             config_.max_seq, ", not ", ShapeText(tokens.shape())));
  }
  Tensor placed = shard_input(tokens);
  Tensor positions = narrow(position_embedding_.weight(), 0, 0, tokens.size(1));
  Tensor h = constrain(token_embedding_(placed) + positions, Activation::kBatch);
  for (const std::unique_ptr<TransformerBlock>& block : blocks_) h = (*block)(h);
  return constrain(head_(ln_f_(h)), Activation::kFeatures);
}

Tensor TransformerLM::loss(const Tensor& tokens, const Tensor& targets) const {
  return cross_entropy_loss(forward(tokens), shard_input(targets));
}

}  // namespace vkspmd::nn
