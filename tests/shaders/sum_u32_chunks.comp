// partial[i] = sum of input[i*chunk .. min((i+1)*chunk, count)) (wrapping u32 addition).
// Each invocation loops at most `chunk` times, so repeated passes sum any length exactly even
// under llvmpipe's 65,535-iterations-per-invocation loop limit.
#version 460
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Input { uint values[]; };
layout(set = 0, binding = 1) writeonly buffer Partial { uint partial[]; };
layout(push_constant) uniform Push { uint count; uint chunk; } push;

void main() {
  uint i = gl_GlobalInvocationID.x;
  uint begin = i * push.chunk;
  if (begin >= push.count) return;
  uint end = min(begin + push.chunk, push.count);
  uint total = 0;
  for (uint j = begin; j < end; ++j) total += values[j];
  partial[i] = total;
}
