/* SPDX-License-Identifier: GPL-3.0-or-later */
/* bench/memory-paths: which memory path lets lavapipe stream `y = a*x + y` (float32)?
 *
 * One standalone run measures, on the same arrays and sizes (2^24 and 2^26 elements):
 *   bda_f32     buffer reference (GL_EXT_buffer_reference), one float per access
 *   bda_u64     buffer reference, uint64_t per access (two floats)
 *   ssbo_f32    descriptor-bound std430 SSBO, float[]
 *   ssbo_vec4   descriptor-bound SSBO, vec4[]
 *   ssbo_uvec2  descriptor-bound SSBO, uvec2[]
 *   ssbo_u64    descriptor-bound SSBO, uint64_t[]
 *   tex_r32f    storage texel buffer, imageBuffer r32f
 *   tex_rgba32f storage texel buffer, imageBuffer rgba32f
 *   utex_r32f, utex_rgba32f  reads through uniform texel buffers (textureBuffer texelFetch),
 *               the store through a storage texel buffer on the same memory. Off unless
 *               MEMORY_PATHS_UTEX=1: Mesa 22.3 lavapipe segfaults in vkCreateComputePipelines
 *               on these kernels (with samplerBuffer as with textureBuffer).
 * against a C + OpenMP triad a[i] = b[i] + s*c[i] (12 bytes per element for both).
 *
 * Descriptors go through VK_KHR_push_descriptor. A storage-buffer descriptor may cover at
 * most maxStorageBufferRange bytes, so the SSBO variants dispatch once per chunk of that
 * size (pushing new descriptors per chunk); texel buffers are limited by
 * maxTexelBufferElements. Each pipeline is dispatched once to warm up (and checked), then
 * timed best of 5 (wall clock around submit + wait).
 *
 * Self-contained: raw Vulkan, GLSL compiled at run time with the glslang C API.
 * Run: ./build/bench/memory-paths [reps]   (ratio = kernel / triad, runs interleaved).
 *
 * Result on Mesa 22.3.6 lavapipe (2 CPUs, shared machine, 3 runs): no path reaches 0.8 of
 * the triad. Best ratio per path: bda_f32 0.23, bda_u64 0.37, ssbo_f32 0.20, ssbo_vec4
 * 0.28, ssbo_uvec2 0.26, ssbo_u64 0.36, tex_r32f 0.32, tex_rgba32f 0.43 (0.28-0.43 over
 * runs). */
#include "tl-glsl.h"
#include <vulkan/vulkan.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                   \
  do {                                                                             \
    VkResult r_ = (x);                                                             \
    if (r_ != VK_SUCCESS) {                                                        \
      fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)r_);     \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* ---------- GLSL ---------- */

/* The library's run-time compiler (compute/expr/tl-glsl.c), so the kernels here are built
 * exactly as the expression engine builds its own. */
static uint32_t *compile_glsl(const char *src, size_t *bytes) {
  guint32 *spv = NULL;
  gsize size = 0;
  GError *error = NULL;
  if (!tl_glsl_compile(src, "memory-paths", &spv, &size, &error)) {
    fprintf(stderr, "%s\n%s\n", error->message, src);
    exit(1);
  }
  *bytes = size;
  return spv;
}

/* Each invocation handles U elements (U/W words of W floats); consecutive invocations
 * touch consecutive words (SIMD lanes contiguous). Push constants are copied to locals
 * once. `n` is the number of words in this dispatch; words are offset by `off`. */
enum kind { BDA, SSBO, TEX, UTEX };
typedef struct {
  const char *name;
  enum kind kind;
  int width;         /* floats per access */
  VkFormat format;   /* texel buffers */
  const char *decl;  /* declarations */
  const char *body;  /* loop body, index j (word), locals av */
} variant_t;

static const variant_t variants[] = {
  { "bda_f32", BDA, 1, 0,
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer F { float v[]; };\n"
    "layout(push_constant) uniform P { F x; F y; float a; uint n; uint off; } pc;\n",
    "yb.v[j] = av * xb.v[j] + yb.v[j];" },
  { "bda_u64", BDA, 2, 0,
    "layout(buffer_reference, std430, buffer_reference_align = 8) buffer F { uint64_t v[]; };\n"
    "layout(push_constant) uniform P { F x; F y; float a; uint n; uint off; } pc;\n",
    "vec2 xv = uintBitsToFloat(unpackUint2x32(xb.v[j]));\n"
    "vec2 yv = uintBitsToFloat(unpackUint2x32(yb.v[j]));\n"
    "yb.v[j] = packUint2x32(floatBitsToUint(av * xv + yv));" },
  { "ssbo_f32", SSBO, 1, 0,
    "layout(std430, binding = 0) readonly buffer X { float v[]; } xb;\n"
    "layout(std430, binding = 1) buffer Y { float v[]; } yb;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "yb.v[j] = av * xb.v[j] + yb.v[j];" },
  { "ssbo_vec4", SSBO, 4, 0,
    "layout(std430, binding = 0) readonly buffer X { vec4 v[]; } xb;\n"
    "layout(std430, binding = 1) buffer Y { vec4 v[]; } yb;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "yb.v[j] = av * xb.v[j] + yb.v[j];" },
  { "ssbo_uvec2", SSBO, 2, 0,
    "layout(std430, binding = 0) readonly buffer X { uvec2 v[]; } xb;\n"
    "layout(std430, binding = 1) buffer Y { uvec2 v[]; } yb;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "yb.v[j] = floatBitsToUint(av * uintBitsToFloat(xb.v[j]) + uintBitsToFloat(yb.v[j]));" },
  { "ssbo_u64", SSBO, 2, 0,
    "layout(std430, binding = 0) readonly buffer X { uint64_t v[]; } xb;\n"
    "layout(std430, binding = 1) buffer Y { uint64_t v[]; } yb;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "vec2 xv = uintBitsToFloat(unpackUint2x32(xb.v[j]));\n"
    "vec2 yv = uintBitsToFloat(unpackUint2x32(yb.v[j]));\n"
    "yb.v[j] = packUint2x32(floatBitsToUint(av * xv + yv));" },
  { "tex_r32f", TEX, 1, VK_FORMAT_R32_SFLOAT,
    "layout(binding = 0, r32f) readonly uniform imageBuffer xb;\n"
    "layout(binding = 1, r32f) uniform imageBuffer yb;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "imageStore(yb, int(j), av * imageLoad(xb, int(j)) + imageLoad(yb, int(j)));" },
  { "tex_rgba32f", TEX, 4, VK_FORMAT_R32G32B32A32_SFLOAT,
    "layout(binding = 0, rgba32f) readonly uniform imageBuffer xb;\n"
    "layout(binding = 1, rgba32f) uniform imageBuffer yb;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "imageStore(yb, int(j), av * imageLoad(xb, int(j)) + imageLoad(yb, int(j)));" },
  { "utex_r32f", UTEX, 1, VK_FORMAT_R32_SFLOAT,
    "layout(binding = 0) uniform textureBuffer xb;\n"
    "layout(binding = 1) uniform textureBuffer yb;\n"
    "layout(binding = 2, r32f) writeonly uniform imageBuffer yw;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "imageStore(yw, int(j), av * texelFetch(xb, int(j)) + texelFetch(yb, int(j)));" },
  { "utex_rgba32f", UTEX, 4, VK_FORMAT_R32G32B32A32_SFLOAT,
    "layout(binding = 0) uniform textureBuffer xb;\n"
    "layout(binding = 1) uniform textureBuffer yb;\n"
    "layout(binding = 2, rgba32f) writeonly uniform imageBuffer yw;\n"
    "layout(push_constant) uniform P { float a; uint n; uint off; } pc;\n",
    "imageStore(yw, int(j), av * texelFetch(xb, int(j)) + texelFetch(yb, int(j)));" },
};
#define NVAR (int)(sizeof variants / sizeof variants[0])

static char *make_source(const variant_t *v, int local, int units) {
  static char buf[8192];
  int words = units / v->width;
  snprintf(buf, sizeof buf,
           "#version 460\n"
           "#extension GL_EXT_buffer_reference : require\n"
           "#extension GL_EXT_samplerless_texture_functions : require\n"
           "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
           "layout(local_size_x = %d) in;\n"
           "%s"
           "void main() {\n"
           "  float av = pc.a; uint n = pc.n; uint off = pc.off;\n"
           "%s"
           "  uint base = gl_WorkGroupID.x * %du + gl_LocalInvocationID.x;\n"
           "  for (uint k = 0u; k < %du; k++) {\n"
           "    uint i = base + k * %du;\n"
           "    if (i >= n) break;\n"
           "    uint j = i + off;\n"
           "    %s\n"
           "  }\n"
           "}\n",
           local, v->decl, v->kind == BDA ? "  F xb = pc.x; F yb = pc.y;\n" : "",
           local * words, words, local, v->body);
  return buf;
}

/* ---------- Vulkan ---------- */

static VkInstance inst;
static VkPhysicalDevice phys;
static VkDevice dev;
static VkQueue queue;
static VkCommandPool pool;
static VkFence fence;
static PFN_vkCmdPushDescriptorSetKHR push_desc;
static VkPhysicalDeviceProperties props;

typedef struct {
  VkBuffer buf;
  VkDeviceMemory mem;
  VkDeviceAddress addr;
  float *map;
  VkDeviceSize size;
} array_t;

static void init_vulkan(void) {
  VkApplicationInfo app = { VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2 };
  VkInstanceCreateInfo ici = { VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
  CHECK(vkCreateInstance(&ici, NULL, &inst));
  uint32_t n = 1;
  VkResult r = vkEnumeratePhysicalDevices(inst, &n, &phys);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) exit(1);
  vkGetPhysicalDeviceProperties(phys, &props);
  float prio = 1;
  VkDeviceQueueCreateInfo qci = { VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueFamilyIndex = 0,
                                  .queueCount = 1, .pQueuePriorities = &prio };
  VkPhysicalDeviceVulkan12Features f12 = { VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                           .bufferDeviceAddress = VK_TRUE };
  VkPhysicalDeviceFeatures2 f2 = { VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12,
                                   .features = { .shaderInt64 = VK_TRUE } };
  const char *ext[] = { "VK_KHR_push_descriptor" };
  VkDeviceCreateInfo dci = { VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci,
                             .enabledExtensionCount = 1, .ppEnabledExtensionNames = ext };
  CHECK(vkCreateDevice(phys, &dci, NULL, &dev));
  vkGetDeviceQueue(dev, 0, 0, &queue);
  VkCommandPoolCreateInfo pci = { VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT };
  CHECK(vkCreateCommandPool(dev, &pci, NULL, &pool));
  VkFenceCreateInfo fci = { VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
  CHECK(vkCreateFence(dev, &fci, NULL, &fence));
  push_desc = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(dev, "vkCmdPushDescriptorSetKHR");
  if (!push_desc) {
    fprintf(stderr, "no vkCmdPushDescriptorSetKHR\n");
    exit(1);
  }
}

static array_t make_array(size_t n) {
  array_t a = { .size = n * sizeof(float) };
  VkBufferCreateInfo bci = { VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = a.size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT |
                                      VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                                      VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT };
  CHECK(vkCreateBuffer(dev, &bci, NULL, &a.buf));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev, a.buf, &req);
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(phys, &mp);
  uint32_t type = 0;
  VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
    if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) {
      type = i;
      break;
    }
  VkMemoryAllocateFlagsInfo fi = { VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                   .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT };
  VkMemoryAllocateInfo mai = { VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .pNext = &fi,
                               .allocationSize = req.size, .memoryTypeIndex = type };
  CHECK(vkAllocateMemory(dev, &mai, NULL, &a.mem));
  CHECK(vkBindBufferMemory(dev, a.buf, a.mem, 0));
  CHECK(vkMapMemory(dev, a.mem, 0, VK_WHOLE_SIZE, 0, (void **)&a.map));
  VkBufferDeviceAddressInfo bai = { VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, .buffer = a.buf };
  a.addr = vkGetBufferDeviceAddress(dev, &bai);
  return a;
}

static void free_array(array_t *a) {
  vkUnmapMemory(dev, a->mem);
  vkDestroyBuffer(dev, a->buf, NULL);
  vkFreeMemory(dev, a->mem, NULL);
}

typedef struct {
  VkPipeline pipe;
  VkPipelineLayout layout;
  VkDescriptorSetLayout dsl;
  VkShaderModule mod;
} pipeline_t;

static pipeline_t make_pipeline(const variant_t *v, int local, int units) {
  pipeline_t p = { 0 };
  size_t bytes;
  uint32_t *spv = compile_glsl(make_source(v, local, units), &bytes);
  VkShaderModuleCreateInfo smci = { VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = bytes,
                                    .pCode = spv };
  CHECK(vkCreateShaderModule(dev, &smci, NULL, &p.mod));
  g_free(spv);
  VkDescriptorType dt = v->kind == TEX ? VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
                                       : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  VkDescriptorType ut = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
  VkDescriptorSetLayoutBinding b[3] = {
    { 0, v->kind == UTEX ? ut : dt, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
    { 1, v->kind == UTEX ? ut : dt, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
    { 2, dt, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
  };
  VkDescriptorSetLayoutCreateInfo dslci = { VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                            .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
                                            .bindingCount = v->kind == UTEX ? 3 : 2, .pBindings = b };
  VkPushConstantRange pcr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, 32 };
  VkPipelineLayoutCreateInfo plci = { VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .pushConstantRangeCount = 1, .pPushConstantRanges = &pcr };
  if (v->kind != BDA) {
    CHECK(vkCreateDescriptorSetLayout(dev, &dslci, NULL, &p.dsl));
    plci.setLayoutCount = 1;
    plci.pSetLayouts = &p.dsl;
  }
  CHECK(vkCreatePipelineLayout(dev, &plci, NULL, &p.layout));
  VkComputePipelineCreateInfo cpci = {
    VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
    .stage = { VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
               .module = p.mod, .pName = "main" },
    .layout = p.layout,
  };
  CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &p.pipe));
  return p;
}

static void free_pipeline(pipeline_t *p) {
  vkDestroyPipeline(dev, p->pipe, NULL);
  vkDestroyPipelineLayout(dev, p->layout, NULL);
  if (p->dsl) vkDestroyDescriptorSetLayout(dev, p->dsl, NULL);
  vkDestroyShaderModule(dev, p->mod, NULL);
}

/* Records the whole y = a*x + y over n elements into cb; returns the number of dispatches.
 * SSBO: one dispatch per chunk of maxStorageBufferRange bytes (descriptor offset = chunk).
 * TEX: one dispatch per chunk of maxTexelBufferElements texels (views made here). */
static int record(VkCommandBuffer cb, const variant_t *v, const pipeline_t *p, int local, int units,
                  array_t *x, array_t *y, size_t n, float a, VkBufferView *views, int *nviews) {
  VkCommandBufferBeginInfo bi = { VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
  CHECK(vkBeginCommandBuffer(cb, &bi));
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
  size_t words = n / v->width;
  size_t chunk_words = words;
  if (v->kind == SSBO) {
    size_t c = props.limits.maxStorageBufferRange / (4 * v->width);
    if (c < chunk_words) chunk_words = c;
  } else if (v->kind == TEX || v->kind == UTEX) {
    size_t c = props.limits.maxTexelBufferElements;
    if (c < chunk_words) chunk_words = c;
  }
  int wpg = local * (units / v->width); /* words per workgroup */
  int dispatches = 0;
  for (size_t w0 = 0; w0 < words; w0 += chunk_words) {
    size_t cw = words - w0 < chunk_words ? words - w0 : chunk_words;
    struct { uint64_t x, y; float a; uint32_t n, off; } pcb = { x->addr, y->addr, a, (uint32_t)cw,
                                                              (uint32_t)w0 };
    struct { float a; uint32_t n, off; } pcs = { a, (uint32_t)cw, 0 };
    if (v->kind == BDA) {
      vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pcb, &pcb);
    } else {
      VkDescriptorBufferInfo dbi[3] = {
        { x->buf, w0 * 4 * v->width, cw * 4 * v->width },
        { y->buf, w0 * 4 * v->width, cw * 4 * v->width },
        { y->buf, w0 * 4 * v->width, cw * 4 * v->width },
      };
      VkWriteDescriptorSet wr[3] = {
        { VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstBinding = 0, .descriptorCount = 1 },
        { VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstBinding = 1, .descriptorCount = 1 },
        { VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstBinding = 2, .descriptorCount = 1 },
      };
      int nb = v->kind == UTEX ? 3 : 2;
      for (int k = 0; k < nb; k++) {
        if (v->kind == SSBO) {
          wr[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
          wr[k].pBufferInfo = &dbi[k];
        } else {
          VkBufferViewCreateInfo vci = { VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                                         .buffer = dbi[k].buffer, .format = v->format,
                                         .offset = dbi[k].offset, .range = dbi[k].range };
          CHECK(vkCreateBufferView(dev, &vci, NULL, &views[*nviews]));
          wr[k].descriptorType = v->kind == UTEX && k != 2 ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                           : VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
          wr[k].pTexelBufferView = &views[(*nviews)++];
        }
      }
      push_desc(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, nb, wr);
      vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pcs, &pcs);
    }
    vkCmdDispatch(cb, (uint32_t)((cw + wpg - 1) / wpg), 1, 1);
    dispatches++;
  }
  CHECK(vkEndCommandBuffer(cb));
  return dispatches;
}

static double submit_wait(VkCommandBuffer cb) {
  VkSubmitInfo si = { VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb };
  double t0 = now();
  CHECK(vkQueueSubmit(queue, 1, &si, fence));
  CHECK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
  double t = now() - t0;
  CHECK(vkResetFences(dev, 1, &fence));
  return t;
}

/* ---------- C references ---------- */

static double triad_once(float *a, const float *b, const float *c, size_t n, float s) {
  double t0 = now();
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
  return now() - t0;
}

static double c_triad(float *a, const float *b, const float *c, size_t n, float s) {
  double best = 1e30;
  for (int rep = 0; rep < 6; rep++) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    double t = now() - t0;
    if (rep > 0 && t < best) best = t;
  }
  return best;
}

static double c_axpy(float *y, const float *x, size_t n, float s) {
  double best = 1e30;
  for (int rep = 0; rep < 6; rep++) {
    double t0 = now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] = s * x[i] + y[i];
    double t = now() - t0;
    if (rep > 0 && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  init_vulkan();
  printf("# device %s, maxStorageBufferRange %u, maxTexelBufferElements %u, %d OpenMP threads\n",
         props.deviceName, props.limits.maxStorageBufferRange, props.limits.maxTexelBufferElements,
         omp_get_max_threads());
  static const int shapes[][2] = { { 256, 16 }, { 512, 32 }, { 1024, 16 }, { 1024, 32 } };
  const int nshapes = sizeof shapes / sizeof shapes[0];
  const int log2n[] = { 24, 26 };
  VkCommandBufferAllocateInfo cbai = { VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1 };
  VkCommandBuffer cb;
  CHECK(vkAllocateCommandBuffers(dev, &cbai, &cb));

  for (int si = 0; si < 2; si++) {
    size_t n = (size_t)1 << log2n[si];
    double gb = 12.0 * n / 1e9;
    /* C references on their own arrays (first touch in parallel). */
    float *ta = malloc(n * 4), *tb = malloc(n * 4), *tc = malloc(n * 4);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) ta[i] = 0, tb[i] = 1, tc[i] = 2;
    double t_triad = c_triad(ta, tb, tc, n, 3.0f);
    double t_axpy = c_axpy(ta, tb, n, 0.5f);
    printf("\n## n = 2^%d (%zu floats, %.0f MiB per array)\n", log2n[si], n, n * 4.0 / 1048576);
    printf("ratio = kernel GB/s / triad GB/s, both best of %d, runs interleaved\n", reps);
    printf("%-12s %-10s %5s %8s %8s %6s %s\n", "variant", "shape", "disp", "GB/s", "triad", "ratio",
           "check");
    printf("%-12s %-10s %5s %8.2f %8.2f %6.2f\n", "C_axpy", "omp", "-", gb / t_axpy, gb / t_triad,
           t_triad / t_axpy);
    fflush(stdout);

    array_t x = make_array(n), y = make_array(n);
    for (size_t i = 0; i < n; i++) x.map[i] = 1.0f;
    for (int vi = 0; vi < NVAR; vi++) {
      const variant_t *v = &variants[vi];
      if (v->kind == UTEX && !getenv("MEMORY_PATHS_UTEX")) continue;
      for (int sh = 0; sh < nshapes; sh++) {
        int local = shapes[sh][0], units = shapes[sh][1];
        pipeline_t p = make_pipeline(v, local, units);
        VkBufferView views[64];
        int nviews = 0;
        int disp = record(cb, v, &p, local, units, &x, &y, n, 1.0f, views, &nviews);
        for (size_t i = 0; i < n; i++) y.map[i] = (float)(i % 7);
        submit_wait(cb); /* warm-up (JIT) + check */
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
          if (y.map[i] != (float)(i % 7) + 1.0f) bad++;
        /* Interleaved with the triad, so that both see the same load from other jobs. */
        double best = 1e30, tri = 1e30;
        for (int r = 0; r < reps; r++) {
          double t = submit_wait(cb);
          if (t < best) best = t;
          t = triad_once(ta, tb, tc, n, 3.0f);
          if (t < tri) tri = t;
        }
        if (tri < t_triad) t_triad = tri;
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%d", local, units);
        printf("%-12s %-10s %5d %8.2f %8.2f %6.2f %s\n", v->name, shape, disp, gb / best, gb / tri,
               tri / best, bad ? "FAIL" : "ok");
        if (bad) printf("   %zu wrong, y[0]=%g y[n-1]=%g\n", bad, y.map[0], y.map[n - 1]);
        fflush(stdout);
        for (int k = 0; k < nviews; k++) vkDestroyBufferView(dev, views[k], NULL);
        free_pipeline(&p);
      }
    }
    printf("%-12s %-10s %5s %8.2f  (best triad seen at this size)\n", "C_triad", "omp", "-",
           gb / t_triad);
    free(ta), free(tb), free(tc);
    free_array(&x);
    free_array(&y);
  }
  vkDestroyFence(dev, fence, NULL);
  vkDestroyCommandPool(dev, pool, NULL);
  vkDestroyDevice(dev, NULL);
  vkDestroyInstance(inst, NULL);
  return 0;
}
