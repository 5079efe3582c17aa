// A tiny program outside the vkspmd tree: it finds the installed package with find_package, opens
// two mesh devices through the public API and computes with a tensor sharded over both.
#include <vkspmd/vkspmd.h>

#include <cstdio>

int main() {
  try {
    std::vector<vkspmd::PhysicalDevice> physical = vkspmd::ListPhysicalDevices();
    vkspmd::DeviceSet devices = vkspmd::DeviceSet::Open(2);
    std::printf(
        "consumer: vkspmd %s, %zu physical device(s), %d mesh devices, mesh device 1 on %s\n",
        vkspmd::version(), physical.size(), devices.size(),
        devices.devices()[1].physical_name.c_str());
    if (devices.size() != 2) return 1;
    vkspmd::Tensor t = vkspmd::arange(6).to(vkspmd::float32);
    vkspmd::mark_sharding(t, vkspmd::Mesh({2}), {0});
    const double total = (t * 2).sum().item();
    std::printf("consumer: sum over a 2-device mesh %g\n", total);
    return total == 30 ? 0 : 1;
  } catch (const vkspmd::Error& error) {
    std::fprintf(stderr, "consumer: %s\n", error.what());
    return 1;
  }
}
