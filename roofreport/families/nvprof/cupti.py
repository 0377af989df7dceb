"""CUPTI callback ids -> CUDA API names, for nvprof's SQLite profiles.

nvprof stores API records as (cbid, start, end) with no name: the name is the CUPTI callback id
of the runtime (`CUPTI_ACTIVITY_KIND_RUNTIME`) or driver (`CUPTI_ACTIVITY_KIND_DRIVER`) API. The
ids are stable across CUDA versions (new ones are appended). This table holds the calls deep
learning and CUDA samples make; names are printed as nvprof prints them, without the `_v3020`
/ `_v2` version suffix. An id not listed here is named `cudaRuntimeApi#<id>` /
`cuDriverApi#<id>` (and the parser warns).
"""

from __future__ import annotations

RUNTIME: dict[int, str] = {
    1: "cudaDriverGetVersion", 2: "cudaRuntimeGetVersion", 3: "cudaGetDeviceCount",
    4: "cudaGetDeviceProperties", 5: "cudaChooseDevice", 8: "cudaConfigureCall",
    9: "cudaSetupArgument", 10: "cudaGetLastError", 11: "cudaPeekAtLastError",
    12: "cudaGetErrorString", 13: "cudaLaunch", 14: "cudaFuncSetCacheConfig",
    15: "cudaFuncGetAttributes", 16: "cudaSetDevice", 17: "cudaGetDevice",
    18: "cudaSetValidDevices", 19: "cudaSetDeviceFlags", 20: "cudaMalloc", 21: "cudaMallocPitch",
    22: "cudaFree", 23: "cudaMallocArray", 24: "cudaFreeArray", 25: "cudaMallocHost",
    26: "cudaFreeHost", 27: "cudaHostAlloc", 28: "cudaHostGetDevicePointer",
    29: "cudaHostGetFlags", 30: "cudaMemGetInfo", 31: "cudaMemcpy", 32: "cudaMemcpy2D",
    39: "cudaMemcpyToSymbol", 40: "cudaMemcpyFromSymbol", 41: "cudaMemcpyAsync",
    44: "cudaMemcpy2DAsync", 47: "cudaMemcpyToSymbolAsync", 48: "cudaMemcpyFromSymbolAsync",
    49: "cudaMemset", 50: "cudaMemset2D", 51: "cudaMemsetAsync", 52: "cudaMemset2DAsync",
    53: "cudaGetSymbolAddress", 54: "cudaGetSymbolSize", 123: "cudaThreadExit",
    126: "cudaThreadSynchronize", 129: "cudaStreamCreate", 130: "cudaStreamDestroy",
    131: "cudaStreamSynchronize", 132: "cudaStreamQuery", 133: "cudaEventCreate",
    134: "cudaEventCreateWithFlags", 135: "cudaEventRecord", 136: "cudaEventDestroy",
    137: "cudaEventSynchronize", 138: "cudaEventQuery", 139: "cudaEventElapsedTime",
    147: "cudaStreamWaitEvent", 151: "cudaPointerGetAttributes", 152: "cudaHostRegister",
    153: "cudaHostUnregister", 154: "cudaDeviceCanAccessPeer", 155: "cudaDeviceEnablePeerAccess",
    156: "cudaDeviceDisablePeerAccess", 160: "cudaMemcpyPeer", 161: "cudaMemcpyPeerAsync",
    164: "cudaDeviceReset", 165: "cudaDeviceSynchronize", 166: "cudaDeviceGetLimit",
    167: "cudaDeviceSetLimit", 170: "cudaProfilerInitialize", 171: "cudaProfilerStart",
    172: "cudaProfilerStop", 173: "cudaDeviceGetByPCIBusId", 174: "cudaDeviceGetPCIBusId",
    176: "cudaIpcGetEventHandle", 177: "cudaIpcOpenEventHandle", 178: "cudaIpcGetMemHandle",
    179: "cudaIpcOpenMemHandle", 180: "cudaIpcCloseMemHandle", 185: "cudaCreateTextureObject",
    186: "cudaDestroyTextureObject", 197: "cudaStreamAddCallback",
    198: "cudaStreamCreateWithFlags", 200: "cudaDeviceGetAttribute", 201: "cudaStreamDestroy",
    202: "cudaStreamCreateWithPriority", 203: "cudaStreamGetPriority", 204: "cudaStreamGetFlags",
    205: "cudaDeviceGetStreamPriorityRange", 206: "cudaMallocManaged",
    207: "cudaOccupancyMaxActiveBlocksPerMultiprocessor", 209: "cudaGetErrorName",
    210: "cudaOccupancyMaxActiveBlocksPerMultiprocessor", 211: "cudaLaunchKernel",
    212: "cudaGetDeviceFlags", 251: "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
    252: "cudaMemPrefetchAsync", 254: "cudaMemAdvise", 269: "cudaLaunchCooperativeKernel",
    273: "cudaFuncSetAttribute", 284: "cudaLaunchHostFunc", 311: "cudaGraphLaunch",
    315: "cudaStreamBeginCapture", 317: "cudaStreamIsCapturing", 319: "cudaStreamEndCapture",
}

DRIVER: dict[int, str] = {
    1: "cuInit", 2: "cuDriverGetVersion", 3: "cuDeviceGet", 4: "cuDeviceGetCount",
    5: "cuDeviceGetName", 6: "cuDeviceComputeCapability", 7: "cuDeviceTotalMem",
    8: "cuDeviceGetProperties", 9: "cuDeviceGetAttribute", 10: "cuCtxCreate",
    11: "cuCtxDestroy", 16: "cuCtxGetDevice", 17: "cuCtxSynchronize", 18: "cuModuleLoad",
    19: "cuModuleLoadData", 20: "cuModuleLoadDataEx", 22: "cuModuleUnload",
    23: "cuModuleGetFunction", 259: "cuDeviceTotalMem", 303: "cuCtxSetCurrent",
    304: "cuCtxGetCurrent", 305: "cuMemcpy", 306: "cuMemcpyAsync", 307: "cuLaunchKernel",
    332: "cuDeviceGetPCIBusId", 386: "cuDevicePrimaryCtxRetain",
    387: "cuDevicePrimaryCtxRelease", 392: "cuDevicePrimaryCtxGetState", 482: "cuDeviceGetUuid",
}

# CUpti_ActivityMemcpyKind -> how nvprof names the copy
MEMCPY_KINDS: dict[int, str] = {
    1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
    9: "HtoH", 10: "PtoP",
}
