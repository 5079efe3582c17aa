// Training from Python: grad/backward, the vkspmd.nn layers and losses, the sharding strategies
// (fsdp_v2, ...), and the vkspmd.optim optimizers. Models are the C++ layers; the training loop
// is written in Python (each call traces into the step's graph; mark_step() runs it).
#include <pybind11/stl.h>

#include <string>

#include "python/src/bindings.h"
#include "vkspmd/autograd.h"
#include "vkspmd/nn.h"
#include "vkspmd/optim.h"
#include "vkspmd/parallel.h"

namespace vkspmd::python {
namespace {

std::vector<Tensor> TensorList(const py::handle& tensors) {
  std::vector<Tensor> result;
  for (py::handle tensor : py::iter(tensors)) {
    result.push_back(tensor.is_none() ? Tensor() : tensor.cast<Tensor>());
  }
  return result;
}

// A layer class with forward and __call__ (both nn::T::forward).
template <typename T, typename... Init>
py::class_<T, nn::Module> BindLayer(py::module_& nn_module, const char* name, const char* doc) {
  py::class_<T, nn::Module> cls(nn_module, name, doc);
  cls.def("forward", &T::forward, py::arg("input"));
  cls.def("__call__", &T::forward, py::arg("input"));
  return cls;
}

void BindModule(py::module_& nn_module) {
  py::class_<nn::Module>(nn_module, "Module",
                         "The base of every layer (torch.nn.Module). Subclass it in Python: "
                         "call super().__init__(), assign Parameters and child modules as "
                         "attributes (or register_parameter / add_module), define forward.")
      .def(py::init<>())
      .def("register_parameter", &nn::Module::add_parameter, py::arg("name"), py::arg("param"),
           "Makes `param` parameter `name` of this module (replacing one of that name), so "
           "parameters(), optimizers, grad and the strategies see it.")
      .def(
          "add_module",
          [](nn::Module& m, const std::string& name, py::object child) {
            m.add_module(name, child.cast<nn::Module*>());
          },
          py::arg("name"), py::arg("module"), py::keep_alive<1, 3>(),
          "Makes `module` child `name` (its parameters become 'name.*'); this module keeps it "
          "alive.")
      .def(
          "named_modules",
          [](py::object self) {
            py::list result;
            // A C++ layer's own children live inside it: each keeps `self` alive.
            for (const auto& [name, child] : self.cast<const nn::Module&>().named_modules()) {
              result.append(py::make_tuple(
                  name, py::cast(child, py::return_value_policy::reference_internal, self)));
            }
            return result;
          },
          "(dotted name, module) of every descendant, parents first (without the module itself).")
      .def("named_parameters", &nn::Module::named_parameters,
           "(dotted name, tensor) pairs in registration order.")
      .def("parameters", &nn::Module::parameters)
      .def("parameter_count", &nn::Module::parameter_count)
      .def("save_npy", &nn::Module::save_npy, py::arg("directory"))
      .def("load_npy", &nn::Module::load_npy, py::arg("directory"))
      .def("save_safetensors", &nn::Module::save_safetensors, py::arg("path"))
      .def("load_safetensors", &nn::Module::load_safetensors, py::arg("path"),
           py::arg("strict") = true)
      .def("set_compute_dtype", &nn::Module::set_compute_dtype, py::arg("dtype"),
           "Mixed precision (autocast with float32 master weights).")
      .def_property_readonly("compute_dtype", &nn::Module::compute_dtype)
      .def("shard_input", &nn::Module::shard_input, py::arg("input"),
           "Places a model input on the strategy's mesh, dim 0 split over the data axis.");
}

void BindLayers(py::module_& nn_module) {
  BindLayer<nn::Linear>(nn_module, "Linear", "y = x W^T + b, W stored [out, in].")
      .def(py::init<int64_t, int64_t, bool>(), py::arg("in_features"), py::arg("out_features"),
           py::arg("bias") = true)
      .def_property_readonly("weight", &nn::Linear::weight)
      .def_property_readonly("bias", [](const nn::Linear& l) -> py::object {
        return l.bias().defined() ? py::cast(l.bias()) : py::none();
      });
  BindLayer<nn::Embedding>(nn_module, "Embedding", "A lookup table [num_embeddings, dim].")
      .def(py::init<int64_t, int64_t>(), py::arg("num_embeddings"), py::arg("embedding_dim"))
      .def_property_readonly("weight", &nn::Embedding::weight);
  BindLayer<nn::LayerNorm>(nn_module, "LayerNorm", "Normalises the last dim.")
      .def(py::init<int64_t, double>(), py::arg("normalized_shape"), py::arg("eps") = 1e-5)
      .def_property_readonly("weight", &nn::LayerNorm::weight)
      .def_property_readonly("bias", &nn::LayerNorm::bias);
  BindLayer<nn::GELU>(nn_module, "GELU", "The exact GELU.").def(py::init<>());
  BindLayer<nn::MLP>(nn_module, "MLP", "Linear -> GELU -> Linear ('fc1', 'fc2').")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("in_features"),
           py::arg("hidden_features"), py::arg("out_features"));
  BindLayer<nn::CausalSelfAttention>(nn_module, "CausalSelfAttention",
                                     "Causal multi-head self-attention on [B, T, d_model].")
      .def(py::init<int64_t, int64_t>(), py::arg("d_model"), py::arg("heads"));
  BindLayer<nn::TransformerBlock>(nn_module, "TransformerBlock", "A pre-LN transformer block.")
      .def(py::init<int64_t, int64_t>(), py::arg("d_model"), py::arg("heads"));
  py::class_<nn::TransformerConfig>(nn_module, "TransformerConfig")
      .def(py::init(
               [](int64_t vocab, int64_t d_model, int64_t heads, int64_t layers, int64_t max_seq) {
                 return nn::TransformerConfig{vocab, d_model, heads, layers, max_seq};
               }),
           py::kw_only(), py::arg("vocab") = 64, py::arg("d_model") = 32, py::arg("heads") = 4,
           py::arg("layers") = 2, py::arg("max_seq") = 32)
      .def_readwrite("vocab", &nn::TransformerConfig::vocab)
      .def_readwrite("d_model", &nn::TransformerConfig::d_model)
      .def_readwrite("heads", &nn::TransformerConfig::heads)
      .def_readwrite("layers", &nn::TransformerConfig::layers)
      .def_readwrite("max_seq", &nn::TransformerConfig::max_seq);
  BindLayer<nn::TransformerLM>(nn_module, "TransformerLM",
                               "A small GPT: int32 tokens [B, T] -> logits [B, T, vocab].")
      .def(py::init<const nn::TransformerConfig&>(), py::arg("config"))
      .def("loss", &nn::TransformerLM::loss, py::arg("tokens"), py::arg("targets"),
           "The mean cross-entropy of forward(tokens) against int32 targets [B, T].");
  BindLayer<nn::MlpRegressor>(nn_module, "MlpRegressor", "An MLP trained with the MSE loss.")
      .def(py::init<int64_t, int64_t, int64_t>(), py::arg("in_features"),
           py::arg("hidden_features"), py::arg("out_features"))
      .def("loss", &nn::MlpRegressor::loss, py::arg("input"), py::arg("target"));
  nn_module.def("cross_entropy_loss", &nn::cross_entropy_loss, py::arg("input"), py::arg("target"));
  nn_module.def("mse_loss", &nn::mse_loss, py::arg("input"), py::arg("target"));
}

void BindStrategies(py::module_& nn_module) {
  nn_module.def("data_parallel", &nn::data_parallel, py::arg("model"), py::arg("mesh"),
                py::arg("data_axis") = "dp");
  nn_module.def("tensor_parallel", &nn::tensor_parallel, py::arg("model"), py::arg("mesh"),
                py::arg("model_axis") = "tp");
  nn_module.def("data_tensor_parallel", &nn::data_tensor_parallel, py::arg("model"),
                py::arg("mesh"), py::arg("data_axis") = "dp", py::arg("model_axis") = "tp");
  nn_module.def("fsdp_v2", &nn::fsdp_v2, py::arg("model"), py::arg("mesh"),
                py::arg("fsdp_axis") = "fsdp",
                "FSDP via SPMD (PyTorch/XLA's FSDPv2): every parameter's largest dim split over "
                "`fsdp_axis`, inputs split on their batch dim.");
  nn_module.def("apply_strategy", &nn::apply_strategy, py::arg("model"), py::arg("mesh"),
                py::arg("strategy"));
  nn_module.def("strategy_mesh", &nn::strategy_mesh, py::arg("strategy"), py::arg("shape"));
}

void BindOptimizers(py::module_& optim_module) {
  py::class_<optim::Optimizer>(optim_module, "Optimizer")
      .def(
          "step",
          [](optim::Optimizer& o, py::object grads) {
            if (grads.is_none()) {
              o.step();
            } else {
              o.step(TensorList(grads));
            }
          },
          py::arg("grads") = py::none(),
          "One update with each parameter's .grad (or `grads`, one per parameter; None skips).")
      .def_property("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr)
      .def("step_count", &optim::Optimizer::step_count, py::arg("index") = 0)
      .def_property_readonly("params", &optim::Optimizer::params)
      .def("state_tensors", &optim::Optimizer::state_tensors);
  py::class_<optim::SGD, optim::Optimizer>(optim_module, "SGD", "torch.optim.SGD.")
      .def(py::init([](py::handle params, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov) {
             return std::make_unique<optim::SGD>(TensorList(params), lr, momentum, dampening,
                                                 weight_decay, nesterov);
           }),
           py::arg("params"), py::arg("lr"), py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
           py::arg("weight_decay") = 0.0, py::arg("nesterov") = false);
  py::class_<optim::AdamW, optim::Optimizer>(optim_module, "AdamW", "torch.optim.AdamW.")
      .def(py::init([](py::handle params, double lr, std::pair<double, double> betas, double eps,
                       double weight_decay) {
             return std::make_unique<optim::AdamW>(TensorList(params), lr, betas, eps,
                                                   weight_decay);
           }),
           py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2);
  py::class_<optim::GradScaler>(optim_module, "GradScaler",
                                "Dynamic loss scaling for float16 (torch.cuda.amp.GradScaler).")
      .def(py::init<double, double, double, int64_t>(), py::arg("init_scale") = 65536.0,
           py::arg("growth_factor") = 2.0, py::arg("backoff_factor") = 0.5,
           py::arg("growth_interval") = 2000)
      .def("scale", &optim::GradScaler::scale, py::arg("loss"), "loss * scale, in float32.")
      .def(
          "step",
          [](optim::GradScaler& scaler, optim::Optimizer& optimizer, py::handle grads) {
            return scaler.step(optimizer, TensorList(grads));
          },
          py::arg("optimizer"), py::arg("grads"),
          "Unscales `grads` and steps the optimizer unless one holds an inf or NaN (reads one "
          "value); whether it stepped.")
      .def("update", &optim::GradScaler::update)
      .def("get_scale", &optim::GradScaler::get_scale)
      .def_property_readonly("growth_tracker", &optim::GradScaler::growth_tracker)
      .def_property_readonly("skipped_steps", &optim::GradScaler::skipped_steps)
      .def("load_state", &optim::GradScaler::load_state, py::arg("scale"),
           py::arg("growth_tracker"));
}

}  // namespace

void BindTraining(py::module_& module) {
  module.def(
      "grad", [](const Tensor& loss, py::handle inputs) { return grad(loss, TensorList(inputs)); },
      py::arg("outputs"), py::arg("inputs"),
      "d loss / d input for each input (torch.autograd.grad), traced into the step's graph.");
  module.def("backward", &backward, py::arg("loss"),
             "Sets .grad of every requires_grad tensor the scalar loss reaches (replacing).");
  py::module_ nn_module = module.def_submodule("nn", "Layers, losses and sharding strategies.");
  BindModule(nn_module);
  BindLayers(nn_module);
  BindStrategies(nn_module);
  py::module_ optim_module = module.def_submodule("optim", "Optimizers with PyTorch's formulas.");
  BindOptimizers(optim_module);
}

}  // namespace vkspmd::python
