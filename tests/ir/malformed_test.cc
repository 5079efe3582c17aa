// Malformed HLO text: each input must fail with exactly the expected message, which names the
// position (line:column) and what was expected or is inconsistent.
#include <string>

#include "gtest/gtest.h"
#include "src/ir/parser.h"

namespace vkspmd::ir {
namespace {

struct MalformedCase {
  std::string name;
  std::string text;
  std::string error;
};

const MalformedCase kCases[] = {
    {"attribute_on_the_wrong_op",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %p), dimensions={0}
}
)hlo",
     "5:45: attribute dimensions does not apply to negate"},
    {"bad_alias_kind",
     R"hlo(HloModule m, input_output_alias={ {}: (0, {}, maybe-alias) }

ENTRY %m (p: f32[]) -> f32[] {
  ROOT %p = f32[] parameter(0)
}
)hlo",
     "1:58: unknown alias kind 'maybe-alias'"},
    {"bad_direction",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> pred[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = pred[4]{0} compare(f32[4]{0} %p, f32[4]{0} %p), direction=LTE
}
)hlo",
     "5:71: unknown comparison direction 'LTE'"},
    {"bad_module_attribute",
     R"hlo(HloModule m, colour=blue

ENTRY %m () -> f32[] {
  ROOT %c = f32[] constant(1)
}
)hlo",
     "1:14: unsupported module attribute colour"},
    {"bad_padding",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[6] {
  %p = f32[4]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %q = f32[6]{0} pad(f32[4]{0} %p, f32[] %z), padding=1-1
}
)hlo",
     "6:60: malformed padding '1-1'"},
    {"bad_sharding_kind",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={tiled}
}
)hlo",
     "4:47: unsupported sharding 'tiled'"},
    {"bad_slice",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[2] {
  %p = f32[4]{0} parameter(0)
  ROOT %s = f32[2]{0} slice(f32[4]{0} %p), slice={[0,2]}
}
)hlo",
     "5:53: expected ':', got ','"},
    {"constant_bad_float",
     R"hlo(HloModule m

ENTRY %m () -> f32[2] {
  ROOT %c = f32[2]{0} constant({1, x2})
}
)hlo",
     "4:36: expected a floating-point value, got 'x2'"},
    {"constant_bad_pred",
     R"hlo(HloModule m

ENTRY %m () -> pred[] {
  ROOT %c = pred[] constant(yes)
}
)hlo",
     "4:29: expected true or false, got 'yes'"},
    {"constant_elided",
     R"hlo(HloModule m

ENTRY %m () -> f32[100] {
  ROOT %c = f32[100]{0} constant({...})
}
)hlo",
     "4:34: constant values were elided ({...}); print the module with large constants"},
    {"constant_out_of_range",
     R"hlo(HloModule m

ENTRY %m () -> s32[] {
  ROOT %c = s32[] constant(2147483648)
}
)hlo",
     "4:28: value 2147483648 is out of range for s32"},
    {"constant_too_few",
     R"hlo(HloModule m

ENTRY %m () -> f32[3] {
  ROOT %c = f32[3]{0} constant({1, 2})
}
)hlo",
     "4:37: expected 3 elements in dimension 0, got 2"},
    {"constant_too_many",
     R"hlo(HloModule m

ENTRY %m () -> f32[2] {
  ROOT %c = f32[2]{0} constant({1, 2, 3})
}
)hlo",
     "4:37: expected '}' after 2 elements of dimension 0, got ','"},
    {"deep_nesting",
     R"hlo(HloModule m

ENTRY %m (p: ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((f32[]))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))) -> f32[] {
}
)hlo",
     "3:78: nesting is too deep"},
    {"duplicate_instruction",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %p = f32[4]{0} negate(f32[4]{0} %p)
}
)hlo",
     "5:3: duplicate instruction %p"},
    {"duplicate_parameter",
     R"hlo(HloModule m

ENTRY %m (p: f32[4], q: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(0)
}
)hlo",
     "5:28: duplicate parameter(0)"},
    {"dynamic_dim",
     R"hlo(HloModule m

ENTRY %m (p: f32[<=4]) -> f32[4] {
  ROOT %p = f32[<=4]{0} parameter(0)
}
)hlo",
     "3:18: dynamic dimensions are not supported"},
    {"empty_input", R"hlo()hlo", "1:1: expected a computation, got end of input"},
    {"missing_equals",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p f32[4]{0} parameter(0)
}
)hlo",
     "4:6: expected '=', got 'f32'"},
    {"missing_header_and_computation_name",
     R"hlo(ENTRY {
  ROOT %c = f32[] constant(1)
}
)hlo",
     "1:7: expected a name, got '{'"},
    {"missing_parameter_number",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(1)
}
)hlo",
     "3:7: computation %m has no parameter(0)"},
    {"missing_paren",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %p
}
)hlo",
     "6:1: expected ')', got '}'"},
    {"negative_dimension",
     R"hlo(HloModule m

ENTRY %m (p: f32[-1]) -> f32[] {
}
)hlo",
     "3:18: dimension sizes must be >= 0"},
    {"layout_not_a_permutation",
     R"hlo(HloModule m

ENTRY %m (p: f32[2,3]) -> f32[2,3] {
  ROOT %p = f32[2,3]{0,0} parameter(0)
}
)hlo",
     "4:21: layout {0,0} is not a permutation of the 2 dimensions"},
    {"replica_groups_not_iota",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %a = f32[4]{0} all-to-all(f32[4]{0} %p), replica_groups=[2,2]0,1,2,3, dimensions={0}
}
)hlo",
     "5:64: iota replica groups must have the form [groups,size]<=[...]"},
    {"sharding_bad_transpose",
     R"hlo(HloModule m

ENTRY %m (p: f32[4,4]) -> f32[4,4] {
  ROOT %p = f32[4,4]{1,0} parameter(0), sharding={devices=[2,2]<=[2,2]T(0,0)}
}
)hlo",
     "4:59: T(0,0) is not a permutation of the 2 iota reshape dims"},
    {"sharding_device_count",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={devices=[4]0,1,2}
}
)hlo",
     "4:63: devices=[4] needs 4 device ids, got 3"},
    {"sharding_iota_mismatch",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={devices=[4]<=[8]}
}
)hlo",
     "4:55: iota device array [4]<=[8]: the reshape has 8 devices, the array 4"},
    {"tiled_layout_without_parentheses",
     R"hlo(HloModule m

ENTRY %m (p: f32[2,3]) -> f32[2,3] {
  ROOT %p = f32[2,3]{1,0:T} parameter(0)
}
)hlo",
     "4:27: expected '(' after layout annotation T, got '}'"},
    {"sparse_layout",
     R"hlo(HloModule m

ENTRY %m (p: f32[2,3]) -> f32[2,3] {
  ROOT %p = f32[2,3]{1,0:D(D,C)} parameter(0)
}
)hlo",
     "4:30: sparse layouts are not supported (dimension kind C)"},
    {"unknown_comparison_type",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> pred[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = pred[4]{0} compare(f32[4]{0} %p, f32[4]{0} %p), direction=LT, type=PARTIALORDER
}
)hlo",
     "5:80: unsupported comparison type PARTIALORDER"},
    {"unclosed_computation",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
)hlo",
     "5:1: expected '}', got end of input"},
    {"unknown_op",
     R"hlo(HloModule m

ENTRY %m () -> f32[] {
  ROOT %c = f32[] frobnicate()
}
)hlo",
     "4:19: unsupported op frobnicate"},
    {"unknown_operand",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %q)
}
)hlo",
     "5:40: unknown operand %q"},
    {"unknown_to_apply",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %p, f32[] %z), dimensions={0}, to_apply=%sum
}
)hlo",
     "6:76: unknown computation %sum"},
    {"unknown_type",
     R"hlo(HloModule m

ENTRY %m () -> f32[] {
  ROOT %c = f31[] constant(1)
}
)hlo",
     "4:13: unsupported element type 'f31'"},
    {"unsupported_attribute",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %p), wibble=3
}
)hlo",
     "5:45: unsupported attribute wibble"},
    {"unterminated_comment",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  /* nothing ends this
}
)hlo",
     "4:3: unterminated comment"},
    {"unterminated_string",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} custom-call(f32[4]{0} %p), custom_call_target="Sharding
}
)hlo",
     "5:69: unterminated string"},
    {"verify_alias_shape",
     R"hlo(HloModule m, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY %m (p: f32[4]) -> f32[2] {
  %p = f32[4]{0} parameter(0)
  ROOT %s = f32[2]{0} slice(f32[4]{0} %p), slice={[0:2]}
}
)hlo",
     "input_output_alias pairs output f32[2] with parameter f32[4] of another shape"},
    {"verify_broadcast_dims",
     R"hlo(HloModule m

ENTRY %m (p: f32[3]) -> f32[3,4] {
  %p = f32[3]{0} parameter(0)
  ROOT %b = f32[3,4]{1,0} broadcast(f32[3]{0} %p), dimensions={1}
}
)hlo",
     "5:8: %b: broadcast operand dimension 0 (size 3) does not match result dimension 1 (size 4)"},
    {"verify_custom_call_target",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} custom-call(f32[4]{0} %p), custom_call_target="my_kernel"
}
)hlo",
     "5:8: %c: unsupported custom-call target \"my_kernel\""},
    {"verify_dot_contracting",
     R"hlo(HloModule m

ENTRY %m (p: f32[2,3], q: f32[4,5]) -> f32[2,5] {
  %p = f32[2,3]{1,0} parameter(0)
  %q = f32[4,5]{1,0} parameter(1)
  ROOT %dot = f32[2,5]{1,0} dot(f32[2,3]{1,0} %p, f32[4,5]{1,0} %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)hlo",
     "6:8: %dot: dot lhs dimension 1 (size 3) does not match rhs dimension 0 (size 4)"},
    {"verify_float_only_op",
     R"hlo(HloModule m

ENTRY %m (p: s32[4]) -> s32[4] {
  %p = s32[4]{0} parameter(0)
  ROOT %e = s32[4]{0} exponential(s32[4]{0} %p)
}
)hlo",
     "5:8: %e: exponential needs a floating-point operand, got s32[4]"},
    {"verify_get_tuple_element_index",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %t = (f32[4]{0}) tuple(f32[4]{0} %p)
  ROOT %g = f32[4]{0} get-tuple-element((f32[4]{0}) %t), index=1
}
)hlo",
     "6:8: %g: index=1 is out of range for (f32[4])"},
    {"verify_global_ids_without_channel",
     R"hlo(HloModule m, num_partitions=2

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %r = f32[4]{0} all-reduce(f32[4]{0} %p), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
}
)hlo",
     "11:8: %r: use_global_device_ids=true needs a channel_id"},
    {"verify_operand_shapes_differ",
     R"hlo(HloModule m

ENTRY %m (p: f32[4], q: f32[3]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[3]{0} parameter(1)
  ROOT %add.3 = f32[4]{0} add(f32[4]{0} %p, f32[3]{0} %q)
}
)hlo",
     "6:8: %add.3: operand shapes f32[4] and f32[3] differ"},
    {"verify_reduce_scatter_divisible",
     R"hlo(HloModule m, num_partitions=4

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %m (p: f32[6]) -> f32[1] {
  %p = f32[6]{0} parameter(0)
  ROOT %r = f32[1]{0} reduce-scatter(f32[6]{0} %p), channel_id=1, replica_groups={}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}
)hlo",
     "11:8: %r: dimension 0 of size 6 is not divisible by the group size 4"},
    {"verify_reduce_to_apply",
     R"hlo(HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %m (p: s32[4]) -> s32[] {
  %p = s32[4]{0} parameter(0)
  %z = s32[] constant(0)
  ROOT %r = s32[] reduce(s32[4]{0} %p, s32[] %z), dimensions={0}, to_apply=%add
}
)hlo",
     "12:8: %r: to_apply=%add parameter 0 must be s32[]"},
    {"verify_replica_group_range",
     R"hlo(HloModule m, num_partitions=2

ENTRY %m (p: f32[4]) -> f32[8] {
  %p = f32[4]{0} parameter(0)
  ROOT %g = f32[8]{0} all-gather(f32[4]{0} %p), channel_id=1, replica_groups={{0,2}}, dimensions={0}, use_global_device_ids=true
}
)hlo",
     "5:8: %g: device id 2 in replica_groups is outside 0..1"},
    {"verify_reshape_count",
     R"hlo(HloModule m

ENTRY %m (p: f32[6]) -> f32[4] {
  %p = f32[6]{0} parameter(0)
  ROOT %r = f32[4]{0} reshape(f32[6]{0} %p)
}
)hlo",
     "5:8: %r: reshape from f32[6] to f32[4] changes the element count"},
    {"verify_select_predicate",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %s = f32[4]{0} select(f32[4]{0} %p, f32[4]{0} %p, f32[4]{0} %p)
}
)hlo",
     "5:8: %s: select's first operand must be pred"},
    {"verify_shape_mismatch",
     R"hlo(HloModule m

ENTRY %m (p: f32[4], q: f32[4]) -> f32[3] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(1)
  ROOT %add.3 = f32[3]{0} add(f32[4]{0} %p, f32[4]{0} %q)
}
)hlo",
     "6:8: %add.3: shape f32[3] does not match the inferred shape f32[4]"},
    {"operand_shape_contradicts_the_operand",
     R"hlo(HloModule m

ENTRY %m (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %a = f32[8]{0} add(f32[4]{0} %x, f32[8]{0} %x)
}
)hlo",
     "5:27: operand %x is annotated f32[4] but is f32[8]"},
    {"sharding_device_listed_twice",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={devices=[2]1,1}
}
)hlo",
     "4:55: device array [2] lists device 1 twice"},
    {"sharding_device_negative",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={devices=[2]0,-1}
}
)hlo",
     "4:55: device array [2] has a negative device id -1"},
    {"sharding_device_out_of_range",
     R"hlo(HloModule m, num_partitions=2

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={devices=[2]0,5}
}
)hlo",
     "4:8: %p: sharding {devices=[2]0,5} uses device 5, but the module has num_partitions=2 "
     "(devices 0..1)"},
    {"sharding_iota_beyond_the_partitions",
     R"hlo(HloModule m, num_partitions=2

ENTRY %m (p: f32[4,4]) -> f32[4,4] {
  ROOT %p = f32[4,4]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}
}
)hlo",
     "4:8: %p: sharding {devices=[2,2]<=[4]} uses device 3, but the module has num_partitions=2 "
     "(devices 0..1)"},
    {"sharding_maximal_beyond_the_partitions",
     R"hlo(HloModule m, num_partitions=4

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={maximal device=77}
}
)hlo",
     "4:8: %p: sharding {maximal device=77} uses device 77, but the module has num_partitions=4 "
     "(devices 0..3)"},
    {"sharding_maximal_negative",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={maximal device=-2}
}
)hlo",
     "4:62: maximal device must not be negative"},
    {"verify_sharding_rank",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  ROOT %p = f32[4]{0} parameter(0), sharding={devices=[2,2]0,1,2,3}
}
)hlo",
     "4:8: %p: sharding {devices=[2,2]0,1,2,3} tiles 2 dims but shape f32[4] has rank 1"},
    {"verify_slice_bounds",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[3] {
  %p = f32[4]{0} parameter(0)
  ROOT %s = f32[3]{0} slice(f32[4]{0} %p), slice={[2:5]}
}
)hlo",
     "5:8: %s: slice [2:5:1] is invalid for dimension 0 of size 4"},
    {"verify_transpose_perm",
     R"hlo(HloModule m

ENTRY %m (p: f32[2,3]) -> f32[3,2] {
  %p = f32[2,3]{1,0} parameter(0)
  ROOT %t = f32[3,2]{1,0} transpose(f32[2,3]{1,0} %p), dimensions={1,1}
}
)hlo",
     "5:8: %t: dimensions={1,1} is not a permutation of rank 2"},
    // What the parser rewrites into IR ops (fusion, call, map, bitcast, async pairs).
    {"fusion_without_calls",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(f32[4]{0} %p), kind=kLoop
}
)hlo",
     "5:8: fusion %f needs calls="},
    {"fusion_unknown_kind",
     R"hlo(HloModule m

%fused (q: f32[4]) -> f32[4] {
  ROOT %q = f32[4]{0} parameter(0)
}

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(f32[4]{0} %p), kind=kFast, calls=%fused
}
)hlo",
     "9:50: unknown fusion kind kFast"},
    {"fusion_operand_count",
     R"hlo(HloModule m

%fused (q: f32[4], r: f32[4]) -> f32[4] {
  %q = f32[4]{0} parameter(0)
  %r = f32[4]{0} parameter(1)
  ROOT %s = f32[4]{0} add(%q, %r)
}

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %f = f32[4]{0} fusion(f32[4]{0} %p), kind=kLoop, calls=%fused
}
)hlo",
     "11:8: fusion %f: computation %fused takes 2 parameters but is given 1 operands"},
    {"call_declared_shape",
     R"hlo(HloModule m

%callee (q: f32[4]) -> f32[4] {
  ROOT %q = f32[4]{0} parameter(0)
}

ENTRY %m (p: f32[4]) -> f32[2] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[2]{0} call(f32[4]{0} %p), to_apply=%callee
}
)hlo",
     "9:8: call %c is declared f32[2] but computes f32[4]"},
    {"call_with_calls",
     R"hlo(HloModule m

%callee (q: f32[4]) -> f32[4] {
  ROOT %q = f32[4]{0} parameter(0)
}

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} call(f32[4]{0} %p), calls=%callee
}
)hlo",
     "9:43: attribute calls does not apply to call"},
    {"map_of_a_reduce",
     R"hlo(HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%f (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %r = f32[] reduce(%x, %x), dimensions={}, to_apply=%add
}

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} map(f32[4]{0} %p), dimensions={0}, to_apply=%f
}
)hlo",
     "16:8: map %c: map: %r of computation %f is a reduce, which is not elementwise"},
    {"map_some_dimensions",
     R"hlo(HloModule m

%f (x: f32[]) -> f32[] {
  ROOT %x = f32[] parameter(0)
}

ENTRY %m (p: f32[2,2]) -> f32[2,2] {
  %p = f32[2,2]{1,0} parameter(0)
  ROOT %c = f32[2,2]{1,0} map(f32[2,2]{1,0} %p), dimensions={0}, to_apply=%f
}
)hlo",
     "9:8: map %c must map every dimension (dimensions={0,1})"},
    {"bitcast_changes_element_type",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> s32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %b = s32[4]{0} bitcast(f32[4]{0} %p)
}
)hlo",
     "5:8: bitcast %b: bitcast from f32[4] to s32[4] changes the element type; XLA writes that as "
     "bitcast-convert"},
    {"bitcast_element_count",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[5] {
  %p = f32[4]{0} parameter(0)
  ROOT %b = f32[5]{0} bitcast(f32[4]{0} %p)
}
)hlo",
     "5:8: bitcast %b: bitcast from f32[4] to f32[5] changes the element count"},
    {"bitcast_between_tiled_layouts",
     R"hlo(HloModule m

ENTRY %m (p: f32[8,128]) -> f32[1024] {
  %p = f32[8,128]{1,0:T(8,128)} parameter(0)
  ROOT %b = f32[1024]{0:T(1024)} bitcast(f32[8,128]{1,0:T(8,128)} %p)
}
)hlo",
     "5:8: bitcast %b between tiled layouts changes meaning with the tiling; only an identity "
     "bitcast of a tiled array is supported"},
    {"async_start_read_by_another_op",
     R"hlo(HloModule m, num_partitions=2

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %start = f32[4]{0} all-reduce-start(f32[4]{0} %p), replica_groups={{0,1}}, to_apply=%add
  ROOT %n = f32[4]{0} negate(f32[4]{0} %start)
}
)hlo",
     "12:40: %start is an async start; only its -done may read it"},
    {"async_done_of_a_plain_op",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %d = f32[4]{0} all-reduce-done(f32[4]{0} %p)
}
)hlo",
     "5:49: %p is not an async start"},
    {"all_gather_start_not_a_tuple",
     R"hlo(HloModule m

ENTRY %m (p: f32[4]) -> f32[8] {
  %p = f32[4]{0} parameter(0)
  %s = f32[8]{0} all-gather-start(f32[4]{0} %p), replica_groups={{0,1}}, dimensions={0}
  ROOT %d = f32[8]{0} all-gather-done(%s)
}
)hlo",
     "5:8: all-gather-start must be a tuple (operand, result, ...), not f32[8]"},
};

class MalformedTest : public testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedTest, FailsWithTheExactMessage) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(GetParam().text);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(module.status().message()), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(Inputs, MalformedTest, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<MalformedCase>& param) {
                           return param.param.name;
                         });

// Bytes that are not printable ASCII are echoed escaped, never raw (a NUL or an escape sequence
// would otherwise reach the terminal).
TEST(MalformedTest, ControlBytesInMessagesAreEscaped) {
  constexpr char kText[] =
      "HloModule m\n\nENTRY %m () -> f32[] {\n  ROOT %c = f32[] constant(1)\x00\x1b\n}\n";
  const std::string text(kText, sizeof(kText) - 1);
  absl::StatusOr<std::unique_ptr<Module>> module = ParseAndVerifyModule(text);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(std::string(module.status().message()), "4:30: expected a name, got '\\x00'");
  absl::StatusOr<Sharding> sharding = ParseSharding(std::string("{replicated}\x07", 13));
  ASSERT_FALSE(sharding.ok());
  EXPECT_EQ(std::string(sharding.status().message()), "1:13: expected end of input, got '\\x07'");
}

TEST(MalformedTest, HasAtLeastThirtyCases) { EXPECT_GE(std::size(kCases), 30u); }

}  // namespace
}  // namespace vkspmd::ir
