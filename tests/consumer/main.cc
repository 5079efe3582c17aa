// A tiny program outside the vkspmd tree: it finds the installed package with find_package and
// opens two mesh devices through the public API.
#include <vkspmd/devices.h>

#include <cstdio>

int main() {
  try {
    std::vector<vkspmd::PhysicalDevice> physical = vkspmd::ListPhysicalDevices();
    vkspmd::DeviceSet devices = vkspmd::DeviceSet::Open(2);
    std::printf("consumer: %zu physical device(s), %d mesh devices, mesh device 1 on %s\n",
                physical.size(), devices.size(), devices.devices()[1].physical_name.c_str());
    return devices.size() == 2 ? 0 : 1;
  } catch (const vkspmd::Error& error) {
    std::fprintf(stderr, "consumer: %s\n", error.what());
    return 1;
  }
}
