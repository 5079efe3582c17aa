"""The type stubs (.pyi) name every public function, class and Tensor method of the extension
and of vkspmd.nn / vkspmd.optim, and the docstrings explain the arguments."""
import ast
import os

import vkspmd
import vkspmd._C as C

PACKAGE = os.path.dirname(vkspmd.__file__)


def stub_names(path, class_name=None):
    tree = ast.parse(open(os.path.join(PACKAGE, path), encoding="utf-8").read())
    body = tree.body
    if class_name is not None:
        body = next(node for node in body
                    if isinstance(node, ast.ClassDef) and node.name == class_name).body
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
    return names


def public(names):
    return {name for name in names if not name.startswith("_")}


def test_stubs_cover_the_extension():
    assert public(dir(C)) - {"nn", "optim", "dtensor", "collectives",
                             "distributed"} <= stub_names("_C.pyi")
    assert public(dir(C.Tensor)) <= stub_names("_C.pyi", "Tensor")
    assert public(dir(C.nn)) <= stub_names("nn/__init__.pyi") | {"functional"}
    assert public(dir(C.optim)) <= stub_names("optim.pyi")
    assert public(dir(C.dtensor)) <= (stub_names("distributed/tensor/__init__.pyi") |
                                      stub_names("distributed/tensor/parallel/__init__.pyi"))
    assert public(dir(C.collectives)) <= stub_names("collectives.pyi")
    assert public(dir(C.distributed)) | {"get_rank", "get_world_size"} <= stub_names(
        "distributed/__init__.pyi")
    assert {"Parameter"} <= stub_names("nn/__init__.pyi")
    assert {"tensor", "visualize_tensor_sharding"} <= stub_names("__init__.pyi")


def test_docstrings_explain_the_arguments():
    doc = vkspmd.mark_sharding.__doc__
    assert "partition_spec" in doc and "None" in doc and "tuple of axes" in doc
    assert "svg_path" in vkspmd.visualize_tensor_sharding.__doc__
    for function in (vkspmd.from_numpy, vkspmd.randn, vkspmd.mark_step, vkspmd.from_dlpack,
                     vkspmd.nn.fsdp_v2, vkspmd.grad, vkspmd.Mesh.__init__,
                     vkspmd.distributed.tensor.distribute_tensor,
                     vkspmd.distributed.tensor.DTensor.redistribute,
                     vkspmd.distributed.tensor.parallel.parallelize_module,
                     vkspmd.distributed.init_device_mesh, vkspmd.nn.Parameter,
                     vkspmd.nn.Module.register_parameter, vkspmd.Tensor.__getitem__,
                     vkspmd.enable_manual_sharding, vkspmd.disable_manual_sharding,
                     vkspmd.shard_map, vkspmd.auto_shard, vkspmd.collectives.all_reduce,
                     vkspmd.collectives.ppermute, vkspmd.collectives.axis_index,
                     vkspmd.distributed.initialize, vkspmd.distributed.addressable_devices):
        assert len(function.__doc__) > 80, function
