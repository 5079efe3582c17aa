# jax.lax.top_k as XLA prints it: newer XLA's `topk` instruction (k=, largest=) in a
# pre-optimisation dump, and the custom-call "TopK" with its sort comparator that older XLA's
# TopkRewriter left in compiled CPU/GPU dumps. Written by hand in XLA's syntax with a NumPy oracle
# (XLA's total order, stable: equal values keep the lower index first); generate.py calls cases().
import numpy as np

rng = np.random.RandomState(1905)
META = 'source_file="/home/user/top_k.py" source_line=4'

# jax.jit(lambda x: lax.top_k(x, 5)).lower(x).as_text(dialect="hlo") with newer XLA.
JAX_TOP_K_PREOPT = f"""HloModule jit_top_k, entry_computation_layout={{(f32[6,40]{{1,0}})->(f32[6,5]{{1,0}}, s32[6,5]{{1,0}})}}

ENTRY main.6 {{
  Arg_0.1 = f32[6,40]{{1,0}} parameter(0), metadata={{op_name="x"}}
  topk.2 = (f32[6,5]{{1,0}}, s32[6,5]{{1,0}}) topk(Arg_0.1), k=5, largest=true, metadata={{op_name="jit(top_k)/jit(main)/top_k[k=5]" {META}}}
  get-tuple-element.3 = f32[6,5]{{1,0}} get-tuple-element(topk.2), index=0, metadata={{op_name="jit(top_k)/jit(main)/top_k[k=5]" {META}}}
  get-tuple-element.4 = s32[6,5]{{1,0}} get-tuple-element(topk.2), index=1, metadata={{op_name="jit(top_k)/jit(main)/top_k[k=5]" {META}}}
  ROOT tuple.5 = (f32[6,5]{{1,0}}, s32[6,5]{{1,0}}) tuple(get-tuple-element.3, get-tuple-element.4)
}}
"""

# The same function compiled for the CPU by an XLA whose TopkRewriter turned sort + slice into a
# custom-call "TopK" keeping the sort's comparator (values, then the iota's indices).
JAX_TOP_K_COMPILED = f"""HloModule jit_top_k, is_scheduled=true, entry_computation_layout={{(f32[6,40]{{1,0}})->(f32[6,5]{{1,0}}, s32[6,5]{{1,0}})}}, allow_spmd_sharding_propagation_to_output={{true,true}}

%compare-greater-than.3 (p.0.lhs.4: f32[], p.0.rhs.5: f32[], p.1.lhs.6: s32[], p.1.rhs.7: s32[]) -> pred[] {{
  %p.0.lhs.4 = f32[] parameter(0)
  %p.0.rhs.5 = f32[] parameter(1)
  %p.1.lhs.6 = s32[] parameter(2)
  %p.1.rhs.7 = s32[] parameter(3)
  ROOT %compare.8 = pred[] compare(f32[] %p.0.lhs.4, f32[] %p.0.rhs.5), direction=GT, type=TOTALORDER
}}

ENTRY %main.6 (Arg_0.1: f32[6,40]) -> (f32[6,5], s32[6,5]) {{
  %Arg_0.1 = f32[6,40]{{1,0}} parameter(0), metadata={{op_name="x"}}
  %custom-call = (f32[6,5]{{1,0}}, s32[6,5]{{1,0}}) custom-call(f32[6,40]{{1,0}} %Arg_0.1), custom_call_target="TopK", to_apply=%compare-greater-than.3, metadata={{op_name="jit(top_k)/jit(main)/top_k[k=5]" {META}}}
  %get-tuple-element.3 = f32[6,5]{{1,0}} get-tuple-element((f32[6,5]{{1,0}}, s32[6,5]{{1,0}}) %custom-call), index=0
  %get-tuple-element.4 = s32[6,5]{{1,0}} get-tuple-element((f32[6,5]{{1,0}}, s32[6,5]{{1,0}}) %custom-call), index=1
  ROOT %tuple.5 = (f32[6,5]{{1,0}}, s32[6,5]{{1,0}}) tuple(f32[6,5]{{1,0}} %get-tuple-element.3, s32[6,5]{{1,0}} %get-tuple-element.4)
}}
"""


def top_k(x, k):
    """The k greatest of every row in XLA's total order, ties to the lower index."""
    bits = x.view(np.int32).astype(np.int64)
    key = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    order = np.argsort(-key, axis=1, kind="stable")[:, :k]
    return [np.take_along_axis(x, order, 1), order.astype(np.int32)]


def cases():
    """(name, hlo, args, outputs, devices) per program, as generate.case() takes them."""
    # Quarters in -5..5: many ties, so the order among equal values is checked; a NaN (above
    # +inf in the total order), +-inf and -0 in the first row.
    x = (rng.randint(-20, 21, size=(6, 40)) / 4).astype(np.float32)
    x[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    expected = top_k(x, 5)
    return [("jax_top_k_preopt", JAX_TOP_K_PREOPT, [x], expected, None),
            ("jax_top_k_compiled", JAX_TOP_K_COMPILED, [x], expected, None)]
