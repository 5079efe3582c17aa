# Compiled-style dumps (`jax.jit(f).lower(...).compile().as_text()`) of the scan, cond, argsort and
# scatter-add programs whose pre-optimisation dumps are tests/testdata/control_flow/{scan,cond}.hlo
# and tests/testdata/{sort_argsort,scatter_add}.hlo: the same functions, hence the same NumPy
# oracles (argsort and scatter-add reuse their siblings' stored inputs and outputs). Written by
# hand in XLA's syntax; generate.py calls cases() and writes the files.
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.dirname(HERE)
rng = np.random.RandomState(1919)

# --- lax.scan of c = 0.5 c + x_t collecting every c, compiled for a TPU-like backend: '%' names,
# typed operands, tiled layouts (scalars {:T(128)}), scheduled; the loop keeps its known trip
# count (and the induction-variable facts) in backend_config; the body's dynamic-slice (with
# JAX's negative-index wrap) and update are loop fusions, the update in place on the carried ys;
# the parameters are copied into the loop state (copy insertion).
SCAN_STATE = "(s32[]{:T(128)}, f32[8]{0:T(256)}, f32[5,8]{1,0:T(8,128)}, f32[5,8]{1,0:T(8,128)})"
SCAN_META = 'source_file="/home/user/scan.py"'
JAX_SCAN_COMPILED = f"""HloModule jit_scan, is_scheduled=true, entry_computation_layout={{(f32[8]{{0:T(256)}}, f32[5,8]{{1,0:T(8,128)}})->(f32[8]{{0:T(256)}}, f32[5,8]{{1,0:T(8,128)}})}}, allow_spmd_sharding_propagation_to_output={{true,true}}

%fused_computation (param_0: f32[8], param_1: f32[5,8], param_2: s32[]) -> f32[8] {{
  %param_0 = f32[8]{{0:T(256)}} parameter(0)
  %constant.3 = f32[]{{:T(128)}} constant(0.5)
  %broadcast.1 = f32[8]{{0:T(256)}} broadcast(f32[]{{:T(128)}} %constant.3), dimensions={{}}
  %multiply.1 = f32[8]{{0:T(256)}} multiply(f32[8]{{0:T(256)}} %param_0, f32[8]{{0:T(256)}} %broadcast.1), metadata={{op_name="jit(scan)/jit(main)/while/body/mul" {SCAN_META} source_line=7}}
  %param_1 = f32[5,8]{{1,0:T(8,128)}} parameter(1)
  %param_2 = s32[]{{:T(128)}} parameter(2)
  %constant.4 = s32[]{{:T(128)}} constant(0)
  %compare.1 = pred[]{{:T(512)}} compare(s32[]{{:T(128)}} %param_2, s32[]{{:T(128)}} %constant.4), direction=LT, metadata={{op_name="jit(scan)/jit(main)/while/body/lt" {SCAN_META} source_line=7}}
  %constant.5 = s32[]{{:T(128)}} constant(5)
  %add.1 = s32[]{{:T(128)}} add(s32[]{{:T(128)}} %param_2, s32[]{{:T(128)}} %constant.5)
  %select.1 = s32[]{{:T(128)}} select(pred[]{{:T(512)}} %compare.1, s32[]{{:T(128)}} %add.1, s32[]{{:T(128)}} %param_2)
  %dynamic-slice.1 = f32[1,8]{{1,0:T(1,128)}} dynamic-slice(f32[5,8]{{1,0:T(8,128)}} %param_1, s32[]{{:T(128)}} %select.1, s32[]{{:T(128)}} %constant.4), dynamic_slice_sizes={{1,8}}, metadata={{op_name="jit(scan)/jit(main)/while/body/dynamic_slice" {SCAN_META} source_line=7}}
  %reshape.1 = f32[8]{{0:T(256)}} reshape(f32[1,8]{{1,0:T(1,128)}} %dynamic-slice.1)
  ROOT %add.2 = f32[8]{{0:T(256)}} add(f32[8]{{0:T(256)}} %multiply.1, f32[8]{{0:T(256)}} %reshape.1), metadata={{op_name="jit(scan)/jit(main)/while/body/add" {SCAN_META} source_line=7}}
}}

%fused_computation.1 (param_0.1: f32[5,8], param_1.1: f32[8], param_2.1: s32[]) -> f32[5,8] {{
  %param_0.1 = f32[5,8]{{1,0:T(8,128)}} parameter(0)
  %param_1.1 = f32[8]{{0:T(256)}} parameter(1)
  %reshape.2 = f32[1,8]{{1,0:T(1,128)}} reshape(f32[8]{{0:T(256)}} %param_1.1)
  %param_2.1 = s32[]{{:T(128)}} parameter(2)
  %constant.6 = s32[]{{:T(128)}} constant(0)
  %compare.2 = pred[]{{:T(512)}} compare(s32[]{{:T(128)}} %param_2.1, s32[]{{:T(128)}} %constant.6), direction=LT
  %constant.7 = s32[]{{:T(128)}} constant(5)
  %add.3 = s32[]{{:T(128)}} add(s32[]{{:T(128)}} %param_2.1, s32[]{{:T(128)}} %constant.7)
  %select.2 = s32[]{{:T(128)}} select(pred[]{{:T(512)}} %compare.2, s32[]{{:T(128)}} %add.3, s32[]{{:T(128)}} %param_2.1)
  ROOT %dynamic-update-slice.1 = f32[5,8]{{1,0:T(8,128)}} dynamic-update-slice(f32[5,8]{{1,0:T(8,128)}} %param_0.1, f32[1,8]{{1,0:T(1,128)}} %reshape.2, s32[]{{:T(128)}} %select.2, s32[]{{:T(128)}} %constant.6), metadata={{op_name="jit(scan)/jit(main)/while/body/dynamic_update_slice" {SCAN_META} source_line=8}}
}}

%region_0.body (arg_tuple.8: (s32[], f32[8], f32[5,8], f32[5,8])) -> (s32[], f32[8], f32[5,8], f32[5,8]) {{
  %arg_tuple.8 = {SCAN_STATE} parameter(0)
  %get-tuple-element.9 = s32[]{{:T(128)}} get-tuple-element({SCAN_STATE} %arg_tuple.8), index=0
  %get-tuple-element.10 = f32[8]{{0:T(256)}} get-tuple-element({SCAN_STATE} %arg_tuple.8), index=1
  %get-tuple-element.11 = f32[5,8]{{1,0:T(8,128)}} get-tuple-element({SCAN_STATE} %arg_tuple.8), index=2
  %fusion = f32[8]{{0:T(256)}} fusion(f32[8]{{0:T(256)}} %get-tuple-element.10, f32[5,8]{{1,0:T(8,128)}} %get-tuple-element.11, s32[]{{:T(128)}} %get-tuple-element.9), kind=kLoop, calls=%fused_computation, metadata={{op_name="jit(scan)/jit(main)/while/body/add" {SCAN_META} source_line=7}}, backend_config={{"flag_configs":[],"scoped_memory_configs":[],"used_scoped_memory_configs":[]}}
  %get-tuple-element.12 = f32[5,8]{{1,0:T(8,128)}} get-tuple-element({SCAN_STATE} %arg_tuple.8), index=3
  %fusion.1 = f32[5,8]{{1,0:T(8,128)}} fusion(f32[5,8]{{1,0:T(8,128)}} %get-tuple-element.12, f32[8]{{0:T(256)}} %fusion, s32[]{{:T(128)}} %get-tuple-element.9), kind=kLoop, calls=%fused_computation.1, metadata={{op_name="jit(scan)/jit(main)/while/body/dynamic_update_slice" {SCAN_META} source_line=8}}, backend_config={{"flag_configs":[],"scoped_memory_configs":[],"used_scoped_memory_configs":[]}}
  %constant.13 = s32[]{{:T(128)}} constant(1)
  %add.14 = s32[]{{:T(128)}} add(s32[]{{:T(128)}} %get-tuple-element.9, s32[]{{:T(128)}} %constant.13), metadata={{op_name="jit(scan)/jit(main)/while/body/add" {SCAN_META} source_line=9}}
  ROOT %tuple.24 = {SCAN_STATE} tuple(s32[]{{:T(128)}} %add.14, f32[8]{{0:T(256)}} %fusion, f32[5,8]{{1,0:T(8,128)}} %get-tuple-element.11, f32[5,8]{{1,0:T(8,128)}} %fusion.1)
}}

%region_1.cond (arg_tuple.26: (s32[], f32[8], f32[5,8], f32[5,8])) -> pred[] {{
  %arg_tuple.26 = {SCAN_STATE} parameter(0)
  %get-tuple-element.27 = s32[]{{:T(128)}} get-tuple-element({SCAN_STATE} %arg_tuple.26), index=0
  %constant.31 = s32[]{{:T(128)}} constant(5)
  ROOT %compare.32 = pred[]{{:T(512)}} compare(s32[]{{:T(128)}} %get-tuple-element.27, s32[]{{:T(128)}} %constant.31), direction=LT, metadata={{op_name="jit(scan)/jit(main)/while/cond/lt" {SCAN_META} source_line=9}}
}}

%fused_computation.2 () -> f32[5,8] {{
  %constant.8 = f32[]{{:T(128)}} constant(0)
  ROOT %broadcast.2 = f32[5,8]{{1,0:T(8,128)}} broadcast(f32[]{{:T(128)}} %constant.8), dimensions={{}}
}}

ENTRY %main.40 (Arg_0.1: f32[8], Arg_1.2: f32[5,8]) -> (f32[8], f32[5,8]) {{
  %constant.7 = s32[]{{:T(128)}} constant(0)
  %Arg_0.1 = f32[8]{{0:T(256)}} parameter(0), metadata={{op_name="carry"}}
  %copy = f32[8]{{0:T(256)}} copy(f32[8]{{0:T(256)}} %Arg_0.1)
  %Arg_1.2 = f32[5,8]{{1,0:T(8,128)}} parameter(1), metadata={{op_name="xs"}}
  %fusion.2 = f32[5,8]{{1,0:T(8,128)}} fusion(), kind=kLoop, calls=%fused_computation.2, backend_config={{"flag_configs":[],"scoped_memory_configs":[],"used_scoped_memory_configs":[]}}
  %tuple.35 = {SCAN_STATE} tuple(s32[]{{:T(128)}} %constant.7, f32[8]{{0:T(256)}} %copy, f32[5,8]{{1,0:T(8,128)}} %Arg_1.2, f32[5,8]{{1,0:T(8,128)}} %fusion.2)
  %while.36 = {SCAN_STATE} while({SCAN_STATE} %tuple.35), condition=%region_1.cond, body=%region_0.body, metadata={{op_name="jit(scan)/jit(main)/while[cond_nconsts=0 body_nconsts=0]" {SCAN_META} source_line=9}}, backend_config={{"known_trip_count":{{"n":"5"}},"known_init_step":{{"init":"0","step":"1"}},"known_induction_variable":{{"tuple_index":"0"}}}}
  %get-tuple-element.37 = f32[8]{{0:T(256)}} get-tuple-element({SCAN_STATE} %while.36), index=1
  %get-tuple-element.38 = f32[5,8]{{1,0:T(8,128)}} get-tuple-element({SCAN_STATE} %while.36), index=3
  ROOT %tuple.39 = (f32[8]{{0:T(256)}}, f32[5,8]{{1,0:T(8,128)}}) tuple(f32[8]{{0:T(256)}} %get-tuple-element.37, f32[5,8]{{1,0:T(8,128)}} %get-tuple-element.38)
}}
"""


def scan(carry, xs):
    ys = np.zeros_like(xs)
    for t in range(xs.shape[0]):
        carry = carry * np.float32(0.5) + xs[t]
        ys[t] = carry
    return [carry, ys]


# --- lax.cond(p, lambda x, n: x * n, lambda x, n: x - n, x, n) compiled for a GPU: '%' names,
# typed operands, the predicate converted to a branch index (branch_computations, false first),
# each branch's body a loop fusion with GPU backend_config, the convert a wrapped fusion.
GPU_LOOP = ('{"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":'
            '{"kind":"__loop_fusion","launch_config":{"num_warps":"1"}},"force_earliest_schedule":false}')
COND_META = 'source_file="/home/user/cond.py"'
JAX_COND_COMPILED = f"""HloModule jit_cond, is_scheduled=true, entry_computation_layout={{(pred[], f32[7]{{0}}, s32[7]{{0}})->f32[7]{{0}}}}, allow_spmd_sharding_propagation_to_parameters={{true,true,true}}, allow_spmd_sharding_propagation_to_output={{true}}, frontend_attributes={{fingerprint_before_lhs="5f0c2e91"}}

%fused_subtract (param_0: f32[7], param_1: s32[7]) -> f32[7] {{
  %param_0 = f32[7]{{0}} parameter(0)
  %param_1 = s32[7]{{0}} parameter(1)
  %convert.0 = f32[7]{{0}} convert(s32[7]{{0}} %param_1), metadata={{op_name="jit(cond)/jit(main)/cond/branch_0_fun/convert_element_type[new_dtype=float32 weak_type=False]" {COND_META} source_line=5}}
  ROOT %subtract.0 = f32[7]{{0}} subtract(f32[7]{{0}} %param_0, f32[7]{{0}} %convert.0), metadata={{op_name="jit(cond)/jit(main)/cond/branch_0_fun/sub" {COND_META} source_line=5}}
}}

%region_0.4 (Arg_.5: (f32[7], s32[7])) -> f32[7] {{
  %Arg_.5 = (f32[7]{{0}}, s32[7]{{0}}) parameter(0)
  %get-tuple-element.6 = f32[7]{{0}} get-tuple-element((f32[7]{{0}}, s32[7]{{0}}) %Arg_.5), index=0
  %get-tuple-element.7 = s32[7]{{0}} get-tuple-element((f32[7]{{0}}, s32[7]{{0}}) %Arg_.5), index=1
  ROOT %loop_subtract_fusion = f32[7]{{0}} fusion(f32[7]{{0}} %get-tuple-element.6, s32[7]{{0}} %get-tuple-element.7), kind=kLoop, calls=%fused_subtract, metadata={{op_name="jit(cond)/jit(main)/cond/branch_0_fun/sub" {COND_META} source_line=5}}, backend_config={GPU_LOOP}
}}

%fused_multiply (param_0.1: f32[7], param_1.1: s32[7]) -> f32[7] {{
  %param_0.1 = f32[7]{{0}} parameter(0)
  %param_1.1 = s32[7]{{0}} parameter(1)
  %convert.1 = f32[7]{{0}} convert(s32[7]{{0}} %param_1.1)
  ROOT %multiply.0 = f32[7]{{0}} multiply(f32[7]{{0}} %param_0.1, f32[7]{{0}} %convert.1), metadata={{op_name="jit(cond)/jit(main)/cond/branch_1_fun/mul" {COND_META} source_line=4}}
}}

%region_1.10 (Arg_.11: (f32[7], s32[7])) -> f32[7] {{
  %Arg_.11 = (f32[7]{{0}}, s32[7]{{0}}) parameter(0)
  %get-tuple-element.12 = f32[7]{{0}} get-tuple-element((f32[7]{{0}}, s32[7]{{0}}) %Arg_.11), index=0
  %get-tuple-element.13 = s32[7]{{0}} get-tuple-element((f32[7]{{0}}, s32[7]{{0}}) %Arg_.11), index=1
  ROOT %loop_multiply_fusion = f32[7]{{0}} fusion(f32[7]{{0}} %get-tuple-element.12, s32[7]{{0}} %get-tuple-element.13), kind=kLoop, calls=%fused_multiply, metadata={{op_name="jit(cond)/jit(main)/cond/branch_1_fun/mul" {COND_META} source_line=4}}, backend_config={GPU_LOOP}
}}

%wrapped_convert_computation (param_0.2: pred[]) -> s32[] {{
  %param_0.2 = pred[] parameter(0)
  ROOT %convert.2 = s32[] convert(pred[] %param_0.2), metadata={{op_name="jit(cond)/jit(main)/convert_element_type[new_dtype=int32 weak_type=False]" {COND_META} source_line=6}}
}}

ENTRY %main.18 (Arg_0.1: pred[], Arg_1.2: f32[7], Arg_2.3: s32[7]) -> f32[7] {{
  %Arg_0.1 = pred[] parameter(0), metadata={{op_name="p"}}
  %wrapped_convert = s32[] fusion(pred[] %Arg_0.1), kind=kLoop, calls=%wrapped_convert_computation, metadata={{op_name="jit(cond)/jit(main)/convert_element_type[new_dtype=int32 weak_type=False]" {COND_META} source_line=6}}, backend_config={GPU_LOOP}
  %Arg_1.2 = f32[7]{{0}} parameter(1), metadata={{op_name="x"}}
  %Arg_2.3 = s32[7]{{0}} parameter(2), metadata={{op_name="n"}}
  %tuple.16 = (f32[7]{{0}}, s32[7]{{0}}) tuple(f32[7]{{0}} %Arg_1.2, s32[7]{{0}} %Arg_2.3)
  ROOT %conditional.17 = f32[7]{{0}} conditional(s32[] %wrapped_convert, (f32[7]{{0}}, s32[7]{{0}}) %tuple.16, (f32[7]{{0}}, s32[7]{{0}}) %tuple.16), branch_computations={{%region_0.4, %region_1.10}}, metadata={{op_name="jit(cond)/jit(main)/cond[linear=(False, False)]" {COND_META} source_line=6}}
}}
"""


def cond(p, x, n):
    return x * n.astype(np.float32) if p else x - n.astype(np.float32)


# --- argsort compiled for the CPU, printed without '%' (bare names, typed operands): the iota a
# loop fusion of no operands; the comparator's TOTALORDER compare expanded as XLA's comparison
# expander does (the float's bits as s32, negative ones flipped through u32 max - bits).
def total_order_key(arg, n):
    return f"""  bitcast-convert.{n} = s32[] bitcast-convert(f32[] {arg})
  constant.{n} = s32[] constant(0)
  compare.{n} = pred[] compare(s32[] bitcast-convert.{n}, s32[] constant.{n}), direction=LT
  constant.{n + 1} = u32[] constant(2147483647)
  bitcast-convert.{n + 1} = u32[] bitcast-convert(f32[] {arg})
  subtract.{n} = u32[] subtract(u32[] constant.{n + 1}, u32[] bitcast-convert.{n + 1})
  bitcast-convert.{n + 2} = s32[] bitcast-convert(u32[] subtract.{n})
  select.{n} = s32[] select(pred[] compare.{n}, s32[] bitcast-convert.{n + 2}, s32[] bitcast-convert.{n})
"""


ARGSORT_META = 'source_file="/home/user/argsort.py" source_line=3'
JAX_ARGSORT_COMPILED = f"""HloModule jit_argsort, is_scheduled=true, entry_computation_layout={{(f32[3,7]{{1,0}})->(f32[3,7]{{1,0}}, s32[3,7]{{1,0}})}}, allow_spmd_sharding_propagation_to_output={{true,true}}

region_0.3.clone (Arg_0.0: f32[], Arg_1.0: f32[], Arg_2.0: s32[], Arg_3.0: s32[]) -> pred[] {{
  Arg_2.0 = s32[] parameter(2)
  Arg_3.0 = s32[] parameter(3)
  Arg_0.0 = f32[] parameter(0)
{total_order_key("Arg_0.0", 1)}  Arg_1.0 = f32[] parameter(1)
{total_order_key("Arg_1.0", 4)}  ROOT compare.7 = pred[] compare(s32[] select.1, s32[] select.4), direction=LT, metadata={{op_name="jit(argsort)/jit(main)/sort" {ARGSORT_META}}}
}}

fused_iota () -> s32[3,7] {{
  ROOT iota.1 = s32[3,7]{{1,0}} iota(), iota_dimension=1, metadata={{op_name="jit(argsort)/jit(main)/iota" {ARGSORT_META}}}
}}

ENTRY main.12 (Arg_0.1: f32[3,7]) -> (f32[3,7], s32[3,7]) {{
  Arg_0.1 = f32[3,7]{{1,0}} parameter(0), metadata={{op_name="x"}}
  iota_fusion = s32[3,7]{{1,0}} fusion(), kind=kLoop, calls=fused_iota, metadata={{op_name="jit(argsort)/jit(main)/iota" {ARGSORT_META}}}
  sort.9 = (f32[3,7]{{1,0}}, s32[3,7]{{1,0}}) sort(f32[3,7]{{1,0}} Arg_0.1, s32[3,7]{{1,0}} iota_fusion), dimensions={{1}}, is_stable=true, to_apply=region_0.3.clone, metadata={{op_name="jit(argsort)/jit(main)/sort" {ARGSORT_META}}}
  get-tuple-element.10 = f32[3,7]{{1,0}} get-tuple-element((f32[3,7]{{1,0}}, s32[3,7]{{1,0}}) sort.9), index=0
  get-tuple-element.11 = s32[3,7]{{1,0}} get-tuple-element((f32[3,7]{{1,0}}, s32[3,7]{{1,0}}) sort.9), index=1
  ROOT tuple.12 = (f32[3,7]{{1,0}}, s32[3,7]{{1,0}}) tuple(f32[3,7]{{1,0}} get-tuple-element.10, s32[3,7]{{1,0}} get-tuple-element.11)
}}
"""

# --- x.at[i].add(v) compiled for a GPU: the indices' reshape a bitcast, the operand copied (it is
# not donated) and updated in place by an input fusion rooted at the scatter.
SCATTER_META = 'source_file="/home/user/f.py" source_line=2'
JAX_SCATTER_ADD_COMPILED = f"""HloModule jit_scatter_add, is_scheduled=true, entry_computation_layout={{(f32[11,7]{{1,0}}, s32[8]{{0}}, f32[8,7]{{1,0}})->f32[11,7]{{1,0}}}}, allow_spmd_sharding_propagation_to_parameters={{true,true,true}}, allow_spmd_sharding_propagation_to_output={{true}}

%region_0.4 (Arg_0.5: f32[], Arg_1.6: f32[]) -> f32[] {{
  %Arg_0.5 = f32[] parameter(0)
  %Arg_1.6 = f32[] parameter(1)
  ROOT %add.7 = f32[] add(f32[] %Arg_0.5, f32[] %Arg_1.6), metadata={{op_name="jit(f)/jit(main)/scatter-add" {SCATTER_META}}}
}}

%fused_scatter (param_0: f32[11,7], param_1.1: s32[8,1], param_2.1: f32[8,7]) -> f32[11,7] {{
  %param_0 = f32[11,7]{{1,0}} parameter(0)
  %param_1.1 = s32[8,1]{{1,0}} parameter(1)
  %param_2.1 = f32[8,7]{{1,0}} parameter(2)
  ROOT %scatter.1 = f32[11,7]{{1,0}} scatter(f32[11,7]{{1,0}} %param_0, s32[8,1]{{1,0}} %param_1.1, f32[8,7]{{1,0}} %param_2.1), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=%region_0.4, metadata={{op_name="jit(f)/jit(main)/scatter-add" {SCATTER_META}}}
}}

ENTRY %main.10 (Arg_0.1: f32[11,7], Arg_1.2: s32[8], Arg_2.3: f32[8,7]) -> f32[11,7] {{
  %Arg_0.1 = f32[11,7]{{1,0}} parameter(0), metadata={{op_name="x"}}
  %copy = f32[11,7]{{1,0}} copy(f32[11,7]{{1,0}} %Arg_0.1)
  %Arg_1.2 = s32[8]{{0}} parameter(1), metadata={{op_name="i"}}
  %bitcast.1 = s32[8,1]{{1,0}} bitcast(s32[8]{{0}} %Arg_1.2)
  %Arg_2.3 = f32[8,7]{{1,0}} parameter(2), metadata={{op_name="v"}}
  ROOT %input_scatter_fusion = f32[11,7]{{1,0}} fusion(f32[11,7]{{1,0}} %copy, s32[8,1]{{1,0}} %bitcast.1, f32[8,7]{{1,0}} %Arg_2.3), kind=kInput, calls=%fused_scatter, metadata={{op_name="jit(f)/jit(main)/scatter-add" {SCATTER_META}}}, backend_config={{"operation_queue_id":"0","wait_on_operation_queues":[],"fusion_backend_config":{{"kind":"__scatter"}},"force_earliest_schedule":false}}
}}
"""


def sibling(stem):
    return np.load(os.path.join(TESTDATA, stem + ".npy"))


def cases():
    """(name, hlo, args, outputs, devices) per program, as generate.case() takes them."""
    carry = rng.uniform(-1.5, 1.5, size=8).astype(np.float32)
    xs = rng.uniform(-1.5, 1.5, size=(5, 8)).astype(np.float32)
    x = rng.uniform(-1.5, 1.5, size=7).astype(np.float32)
    n = rng.randint(-4, 5, size=7).astype(np.int32)
    true = np.array(True)
    # The other branch: its stored predicate (read in place of arg0) and NumPy's result.
    np.save(os.path.join(HERE, "jax_cond_compiled.false.arg0.npy"), np.array(False))
    np.save(os.path.join(HERE, "jax_cond_compiled.false.out.npy"), cond(False, x, n))
    return [
        ("jax_scan_compiled", JAX_SCAN_COMPILED, [carry, xs], scan(carry, xs), None),
        ("jax_cond_compiled", JAX_COND_COMPILED, [true, x, n], cond(True, x, n), None),
        ("jax_argsort_compiled", JAX_ARGSORT_COMPILED, [sibling("sort_argsort.arg0")],
         [sibling("sort_argsort.out.0"), sibling("sort_argsort.out.1")], None),
        ("jax_scatter_add_compiled", JAX_SCATTER_ADD_COMPILED,
         [sibling(f"scatter_add.arg{k}") for k in range(3)], sibling("scatter_add.out"), None),
    ]
