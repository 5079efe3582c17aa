// y[i] = alpha * x[i] + y[i] for i < count: one element per invocation.
#version 460
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Push { uint count; float alpha; } push;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.count) y[i] = fma(push.alpha, x[i], y[i]);
}
