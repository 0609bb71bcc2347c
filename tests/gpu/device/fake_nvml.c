// SPDX-License-Identifier: Apache-2.0
/* A stand-in for libnvidia-ml.so.1 (which only an NVIDIA driver installs): two GPUs with fixed
 * facts, and the loading process itself listed as a graphics process on GPU 1. It lets the
 * tests drive Tessera's real NVML loading and parsing code on a machine without a GPU. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

static int initialised;
static struct nvmlDevice_st { int index; } devices[2] = {{0}, {1}};

int nvmlInit_v2(void) {
    initialised = 1;
    return 0;
}
int nvmlShutdown(void) {
    initialised = 0;
    return 0;
}
const char* nvmlErrorString(int rc) {
    return rc == 3 ? "Not Supported" : "Unknown Error";
}
int nvmlSystemGetDriverVersion(char* out, unsigned len) {
    snprintf(out, len, "%s", "555.42.06");
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int* v) {
    *v = 12050;
    return 0;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
    if (!initialised)
        return 1;
    *n = 2;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
    if (i >= 2)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = &devices[i];
    return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* out, unsigned len) {
    snprintf(out, len, "%s", d->index == 0 ? "NVIDIA GeForce RTX 4070" : "NVIDIA GeForce GTX 1060 6GB");
    return 0;
}
int nvmlDeviceGetUUID(nvmlDevice_t d, char* out, unsigned len) {
    snprintf(out, len, "GPU-0000000%d-1111-2222-3333-444444444444", d->index);
    return 0;
}
int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
    memset(p, 0, sizeof *p);
    p->domain = 0;
    p->bus = d->index == 0 ? 1 : 0x41;
    p->device = 0;
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
    m->total = d->index == 0 ? 12878610432ULL : 6442450944ULL;
    m->used = 1ULL << 30;
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int* major, int* minor) {
    *major = d->index == 0 ? 8 : 6;
    *minor = d->index == 0 ? 9 : 1;
    return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, unsigned type, unsigned* mhz) {
    (void)d;
    (void)type;
    *mhz = 2475;
    return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_t d, unsigned sensor, unsigned* t) {
    (void)sensor;
    *t = d->index == 0 ? 64 : 41;
    return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
    u->gpu = d->index == 0 ? 97 : 3;
    u->memory = 40;
    return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) {
    *mw = d->index == 0 ? 183500 : 9000;
    return 0;
}
/* GPU 1 has no power limit: Tessera must treat the field as absent. */
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned* mw) {
    if (d->index == 1)
        return 3;
    *mw = 200000;
    return 0;
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
    if (d->index == 0) {
        *count = 0;
        return 0;
    }
    /* Report "buffer too small" first, as NVML does, so the caller's resize path is exercised. */
    if (*count < 20) {
        *count = 20;
        return 7;
    }
    *count = 1;
    infos[0].pid = (unsigned)getpid();
    infos[0].usedGpuMemory = 512ULL << 20;
    return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
    (void)d;
    (void)infos;
    *count = 0;
    return 0;
}
