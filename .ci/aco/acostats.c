// acostats compiles SPIR-V compute shaders on a Vulkan device and prints
// what the driver's compiler reports of each, by
// VK_KHR_pipeline_executable_properties (issue 101; .ci/aco.sh runs it
// on Mesa 25.0.7's RADV, a null NAVI31, where ACO compiles for RDNA3):
//
//	acostats [ENTRY FILE.spv ...]
//
// Each pair is one module and its entry point; each compute pipeline is
// created with VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR and never
// dispatched; with no pair, it opens the device only. Output is JSON,
// one object a line: first the device ({"device": ...}), then one a
// module ({"file", "entry", "executables": [{"name", "subgroup_size",
// "stats": {NAME: value}}]}, or "error"). It exits 1 if the device
// cannot be opened, 0 otherwise (a module that does not compile is a
// line with "error").
//
// It loads libvulkan.so.1 at run time (VK_NO_PROTOTYPES): built against
// one system's headers and glibc, it runs on a newer one (bookworm's
// build in trixie's root).
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PFN_vkGetInstanceProcAddr gipa;
static VkInstance inst;
static VkDevice dev;

#define IFN(name) PFN_##name p_##name = (PFN_##name)gipa(inst, #name)

// jstr prints s as a JSON string.
static void jstr(const char *s) {
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void *readfile(const char *path, size_t *n) {
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *b = len > 0 ? malloc((size_t)len) : NULL;
	if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*n = (size_t)len;
	return b;
}

static void fail(const char *what, VkResult r) {
	printf("{\"error\": ");
	jstr(what);
	printf(", \"vkresult\": %d}\n", (int)r);
	exit(1);
}

int main(int argc, char **argv) {
	if (argc % 2 != 1) {
		fprintf(stderr, "usage: acostats [ENTRY FILE.spv ...]\n");
		return 2;
	}
	void *lib = dlopen("libvulkan.so.1", RTLD_NOW);
	if (!lib) {
		printf("{\"error\": ");
		jstr(dlerror());
		printf("}\n");
		return 1;
	}
	gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
	PFN_vkCreateInstance p_vkCreateInstance = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "acostats", .apiVersion = VK_API_VERSION_1_3};
	VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
	VkResult r = p_vkCreateInstance(&ici, NULL, &inst);
	if (r != VK_SUCCESS)
		fail("vkCreateInstance", r);

	IFN(vkEnumeratePhysicalDevices);
	IFN(vkGetPhysicalDeviceProperties);
	IFN(vkGetPhysicalDeviceFeatures2);
	IFN(vkGetPhysicalDeviceQueueFamilyProperties);
	IFN(vkEnumerateDeviceExtensionProperties);
	IFN(vkCreateDevice);
	IFN(vkGetDeviceProcAddr);
	uint32_t n = 0;
	p_vkEnumeratePhysicalDevices(inst, &n, NULL);
	if (n == 0)
		fail("no Vulkan device", VK_ERROR_INITIALIZATION_FAILED);
	VkPhysicalDevice pds[16];
	n = n > 16 ? 16 : n;
	p_vkEnumeratePhysicalDevices(inst, &n, pds);
	VkPhysicalDevice pd = pds[0];
	VkPhysicalDeviceProperties props;
	p_vkGetPhysicalDeviceProperties(pd, &props);

	uint32_t ne = 0;
	p_vkEnumerateDeviceExtensionProperties(pd, NULL, &ne, NULL);
	VkExtensionProperties *exts = calloc(ne ? ne : 1, sizeof *exts);
	p_vkEnumerateDeviceExtensionProperties(pd, NULL, &ne, exts);
	int have = 0;
	for (uint32_t i = 0; i < ne; i++)
		have |= strcmp(exts[i].extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0;
	if (!have)
		fail("the device lacks " VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME, VK_ERROR_EXTENSION_NOT_PRESENT);

	// Every core feature the device has, so that any module the
	// kernels' SPIR-V needs (16-bit storage, f16, subgroups) compiles.
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pef = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
	VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, .pNext = &pef};
	VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .pNext = &f13};
	VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
	VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
	p_vkGetPhysicalDeviceFeatures2(pd, &f2);
	if (!pef.pipelineExecutableInfo)
		fail("the device does not offer pipelineExecutableInfo", VK_ERROR_FEATURE_NOT_PRESENT);
	pef.pipelineExecutableInfo = VK_TRUE;
	// ACOSTATS_WAVE=32 or 64 compiles every pipeline at that subgroup
	// size (requiredSubgroupSize, Vulkan 1.3's subgroupSizeControl);
	// unset, at the driver's choice, as wgpu's pipelines are.
	uint32_t wave = 0;
	if (getenv("ACOSTATS_WAVE"))
		wave = (uint32_t)atoi(getenv("ACOSTATS_WAVE"));
	if (wave && !f13.subgroupSizeControl)
		fail("ACOSTATS_WAVE set, and the device has no subgroupSizeControl", VK_ERROR_FEATURE_NOT_PRESENT);

	uint32_t nq = 0;
	p_vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
	VkQueueFamilyProperties qf[16];
	nq = nq > 16 ? 16 : nq;
	p_vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
	uint32_t fam = UINT32_MAX;
	for (uint32_t i = 0; i < nq && fam == UINT32_MAX; i++)
		if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
			fam = i;
	if (fam == UINT32_MAX)
		fail("no compute queue", VK_ERROR_FEATURE_NOT_PRESENT);
	float prio = 1;
	VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = fam, .queueCount = 1, .pQueuePriorities = &prio};
	const char *ext[] = {VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &f2,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.enabledExtensionCount = 1,
		.ppEnabledExtensionNames = ext,
	};
	r = p_vkCreateDevice(pd, &dci, NULL, &dev);
	if (r != VK_SUCCESS)
		fail("vkCreateDevice", r);
	printf("{\"device\": ");
	jstr(props.deviceName);
	printf(", \"driver_version\": %u, \"api_version\": \"%u.%u.%u\"}\n", props.driverVersion,
	       VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion), VK_API_VERSION_PATCH(props.apiVersion));
	fflush(stdout);

#define DFN(name) PFN_##name p_##name = (PFN_##name)p_vkGetDeviceProcAddr(dev, #name)
	DFN(vkCreateShaderModule);
	DFN(vkDestroyShaderModule);
	DFN(vkCreatePipelineLayout);
	DFN(vkDestroyPipelineLayout);
	DFN(vkCreateComputePipelines);
	DFN(vkDestroyPipeline);
	DFN(vkGetPipelineExecutablePropertiesKHR);
	DFN(vkGetPipelineExecutableStatisticsKHR);
	DFN(vkCreateDescriptorSetLayout);
	DFN(vkDestroyDescriptorSetLayout);

	// A driver compiles a module against its pipeline's layout, as
	// wgpu's does: one descriptor set layout a set the SPIR-V decorates,
	// a uniform buffer at each binding of a Uniform variable and a
	// storage buffer at each of a StorageBuffer one (attn's bind groups
	// have no dynamic offsets; its kernels no push constants).
	for (int a = 1; a + 1 < argc; a += 2) {
		const char *entry = argv[a], *file = argv[a + 1];
		size_t len;
		uint32_t *code = readfile(file, &len);
		printf("{\"file\": ");
		jstr(file);
		printf(", \"entry\": ");
		jstr(entry);
		if (!code || len % 4 != 0 || len < 20 || code[0] != 0x07230203) {
			printf(", \"error\": \"not a SPIR-V file\"}\n");
			free(code);
			continue;
		}
		// Each variable's descriptor set and binding, and whether it is
		// Uniform (storage class 2) or StorageBuffer (12).
		enum { maxS = 4, maxB = 64 };
		int kind[maxS][maxB] = {{0}}; // 0: none, 1: storage, 2: uniform
		size_t words = len / 4;
		uint32_t bound = code[3];
		uint32_t *bindOf = calloc(bound + 1, sizeof *bindOf), *setOf = calloc(bound + 1, sizeof *setOf);
		const char *bad = NULL;
		for (size_t i = 5; i < words;) {
			uint32_t op = code[i] & 0xffff, wc = code[i] >> 16;
			if (wc == 0 || i + wc > words) {
				bad = "a truncated instruction";
				break;
			}
			if (op == 71 && wc >= 4 && code[i + 1] <= bound) { // OpDecorate id decoration n
				if (code[i + 2] == 33)                      // Binding
					bindOf[code[i + 1]] = code[i + 3] + 1;
				if (code[i + 2] == 34) // DescriptorSet
					setOf[code[i + 1]] = code[i + 3] + 1;
			}
			if (op == 59 && wc >= 4 && code[i + 2] <= bound) { // OpVariable type id class
				uint32_t id = code[i + 2], cls = code[i + 3];
				if (bindOf[id] > 0 || setOf[id] > 0) {
					uint32_t b = bindOf[id] - 1, st = setOf[id] - 1;
					if (bindOf[id] == 0 || setOf[id] == 0 || st >= maxS || b >= maxB || (cls != 2 && cls != 12))
						bad = "a resource outside sets 0-3 and bindings 0-63, or not a buffer";
					else
						kind[st][b] = cls == 2 ? 2 : 1;
				}
			}
			i += wc;
		}
		free(bindOf);
		free(setOf);
		if (bad) {
			printf(", \"error\": ");
			jstr(bad);
			printf("}\n");
			free(code);
			continue;
		}
		VkDescriptorSetLayout sets[maxS] = {VK_NULL_HANDLE};
		uint32_t nsets = 0;
		for (uint32_t st = 0; st < maxS; st++)
			for (uint32_t b = 0; b < maxB; b++)
				if (kind[st][b])
					nsets = st + 1;
		r = VK_SUCCESS;
		for (uint32_t st = 0; st < nsets; st++) {
			VkDescriptorSetLayoutBinding lb[maxB];
			uint32_t nb = 0;
			for (uint32_t b = 0; b < maxB; b++)
				if (kind[st][b])
					lb[nb++] = (VkDescriptorSetLayoutBinding){
						.binding = b,
						.descriptorType = kind[st][b] == 2 ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
						.descriptorCount = 1,
						.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
					};
			VkDescriptorSetLayoutCreateInfo dsl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = nb, .pBindings = lb};
			if (r == VK_SUCCESS && (r = p_vkCreateDescriptorSetLayout(dev, &dsl, NULL, &sets[st])) != VK_SUCCESS)
				sets[st] = VK_NULL_HANDLE;
		}
		VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = nsets, .pSetLayouts = sets};
		VkPipelineLayout layout = VK_NULL_HANDLE;
		if (r == VK_SUCCESS)
			r = p_vkCreatePipelineLayout(dev, &plci, NULL, &layout);
		VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = len, .pCode = code};
		VkShaderModule mod = VK_NULL_HANDLE;
		if (r == VK_SUCCESS)
			r = p_vkCreateShaderModule(dev, &smci, NULL, &mod);
		free(code);
		if (r != VK_SUCCESS) {
			printf(", \"error\": \"creating the layout or the shader module\", \"vkresult\": %d}\n", (int)r);
			p_vkDestroyPipelineLayout(dev, layout, NULL);
			for (uint32_t st = 0; st < nsets; st++)
				p_vkDestroyDescriptorSetLayout(dev, sets[st], NULL);
			continue;
		}
		VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rss = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO, .requiredSubgroupSize = wave};
		VkComputePipelineCreateInfo cpci = {
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR,
			.stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .pNext = wave ? &rss : NULL, .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod, .pName = entry},
			.layout = layout,
		};
		VkPipeline pipe;
		r = p_vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &pipe);
		if (r != VK_SUCCESS) {
			printf(", \"error\": \"vkCreateComputePipelines\", \"vkresult\": %d}\n", (int)r);
			p_vkDestroyShaderModule(dev, mod, NULL);
			p_vkDestroyPipelineLayout(dev, layout, NULL);
			for (uint32_t st = 0; st < nsets; st++)
				p_vkDestroyDescriptorSetLayout(dev, sets[st], NULL);
			continue;
		}
		VkPipelineInfoKHR pinfo = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, .pipeline = pipe};
		uint32_t nx = 0;
		p_vkGetPipelineExecutablePropertiesKHR(dev, &pinfo, &nx, NULL);
		VkPipelineExecutablePropertiesKHR *xp = calloc(nx ? nx : 1, sizeof *xp);
		for (uint32_t i = 0; i < nx; i++)
			xp[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
		p_vkGetPipelineExecutablePropertiesKHR(dev, &pinfo, &nx, xp);
		printf(", \"executables\": [");
		for (uint32_t i = 0; i < nx; i++) {
			printf("%s{\"name\": ", i ? ", " : "");
			jstr(xp[i].name);
			printf(", \"subgroup_size\": %u, \"stats\": {", xp[i].subgroupSize);
			VkPipelineExecutableInfoKHR xi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, .pipeline = pipe, .executableIndex = i};
			uint32_t ns = 0;
			p_vkGetPipelineExecutableStatisticsKHR(dev, &xi, &ns, NULL);
			VkPipelineExecutableStatisticKHR *st = calloc(ns ? ns : 1, sizeof *st);
			for (uint32_t j = 0; j < ns; j++)
				st[j].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
			p_vkGetPipelineExecutableStatisticsKHR(dev, &xi, &ns, st);
			for (uint32_t j = 0; j < ns; j++) {
				printf("%s", j ? ", " : "");
				jstr(st[j].name);
				switch (st[j].format) {
				case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
					printf(": %s", st[j].value.b32 ? "true" : "false");
					break;
				case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
					printf(": %lld", (long long)st[j].value.i64);
					break;
				case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
					printf(": %llu", (unsigned long long)st[j].value.u64);
					break;
				default:
					printf(": %.17g", st[j].value.f64);
				}
			}
			free(st);
			printf("}}");
		}
		printf("]}\n");
		fflush(stdout);
		free(xp);
		p_vkDestroyPipeline(dev, pipe, NULL);
		p_vkDestroyShaderModule(dev, mod, NULL);
		p_vkDestroyPipelineLayout(dev, layout, NULL);
		for (uint32_t st = 0; st < nsets; st++)
			p_vkDestroyDescriptorSetLayout(dev, sets[st], NULL);
	}
	return 0;
}
