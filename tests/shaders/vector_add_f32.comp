// c[i] = a[i] + b[i] for i < count: one element per invocation.
#version 460
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint count; } push;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.count) c[i] = a[i] + b[i];
}
