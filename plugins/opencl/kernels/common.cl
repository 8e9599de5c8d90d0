// Prepended to every program of the OpenCL plugin (program.c).
//
// Build options the plugin always passes: -cl-std=CL1.2, and
// -DTSR_HAS_FP64=1 when the device has cl_khr_fp64. Operands arrive as a
// global pointer plus an element offset (ulong), never as sub-buffers.
#if defined(TSR_HAS_FP64) && TSR_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define TSR_MAX_RANK 8

// Element offset of row-major linear index |i| over |rank| sizes, with the
// operand's |strides| (both in elements, outermost first).
inline ulong tsr_strided_offset(ulong i, int rank, __constant const long *sizes,
                                __constant const long *strides) {
  ulong offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    ulong size = (ulong)sizes[d];
    ulong index = i % size;
    i /= size;
    offset += index * (ulong)strides[d];
  }
  return offset;
}
