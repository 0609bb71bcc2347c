// SPDX-License-Identifier: Apache-2.0
/* A stand-in for libnvidia-ml.so.1 for the pause rules' tests: one GPU whose temperature and
 * graphics processes the test sets through the environment while it runs, read on every call:
 *   FAKE_NVML_TEMPERATURE  degrees Celsius [50]
 *   FAKE_NVML_GRAPHICS     "pid:MiB,pid:MiB"; "pid:?" when the driver does not say the memory
 * fake_nvml_reads() counts the temperature queries, so a test can see how often NVML is asked. */
#include <stdlib.h>
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

static struct nvmlDevice_st { int index; } device = {0};
static int reads;

int fake_nvml_reads(void) {
    return reads;
}
int nvmlInit_v2(void) {
    return 0;
}
int nvmlShutdown(void) {
    return 0;
}
const char* nvmlErrorString(int rc) {
    return rc == 7 ? "Insufficient Size" : "Unknown Error";
}
int nvmlDeviceGetCount_v2(unsigned* n) {
    *n = 1;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
    if (i != 0)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *d = &device;
    return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_t d, unsigned sensor, unsigned* t) {
    const char* value = getenv("FAKE_NVML_TEMPERATURE");
    (void)d;
    (void)sensor;
    ++reads;
    *t = value && *value ? (unsigned)atoi(value) : 50;
    return 0;
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
    const char* list = getenv("FAKE_NVML_GRAPHICS");
    unsigned n = 0;
    char buffer[1024];
    (void)d;
    if (list) {
        strncpy(buffer, list, sizeof buffer - 1);
        buffer[sizeof buffer - 1] = '\0';
        for (char* entry = strtok(buffer, ","); entry; entry = strtok(NULL, ",")) {
            char* colon = strchr(entry, ':');
            if (n < *count) {
                infos[n].pid = (unsigned)strtoul(entry, NULL, 10);
                /* NVML_VALUE_NOT_AVAILABLE: all bits set */
                infos[n].usedGpuMemory =
                    !colon || colon[1] == '?' ? ~0ULL : strtoull(colon + 1, NULL, 10) << 20;
                infos[n].gpuInstanceId = infos[n].computeInstanceId = 0;
            }
            ++n;
        }
    }
    if (n > *count) {
        *count = n;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    *count = n;
    return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
    (void)d;
    (void)infos;
    *count = 0;
    return 0;
}
