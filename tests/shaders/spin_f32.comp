// Deliberately slow: every invocation iterates `iterations` times (keep it under llvmpipe's
// loop limit). Tests use it to make a submission outlast its timeout.
#version 460
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) buffer Data { float data[]; };
layout(push_constant) uniform Push { uint count; uint iterations; } push;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= push.count) return;
  float value = data[i];
  for (uint k = 0; k < push.iterations; ++k) value = value * 0.999999 + 1e-7;
  data[i] = value;
}
