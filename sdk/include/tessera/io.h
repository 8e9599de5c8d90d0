// Tessera: safetensors files, checkpoints and DLPack (included by
// tessera/tessera.h).
//
// Files are written crash-safely: to "<path>.tmp.<pid>.<n>", fsynced,
// renamed over |path|, and the folder fsynced, so a crash leaves either the
// old file or the new one, never a half-written one (a killed writer may
// leave its temporary file behind). Readers check every field of the
// header and every offset against the file size before touching data.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_IO_H_
#define TESSERA_IO_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_named_tensor {
  const char *name;
  tsr_tensor *tensor;
} tsr_named_tensor;

// Writes |count| tensors (any device, any strides; stored row-major, little
// endian, dtypes F32 F64 BF16 F16 I32 I64 BOOL) and |metadata_count| string
// pairs under "__metadata__". Names must be unique. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_safetensors_save(const char *path, int32_t count,
                                        const tsr_named_tensor *tensors, int32_t metadata_count,
                                        const char *const *metadata_keys,
                                        const char *const *metadata_values);

typedef struct tsr_safetensors tsr_safetensors;
// Opens and validates a safetensors file (reads it into memory). Errors name
// the file and the problem. Owned by the caller (tsr_safetensors_close).
TSR_API TSR_MUST_USE tsr_status tsr_safetensors_open(const char *path, tsr_safetensors **out_file);
TSR_API void tsr_safetensors_close(tsr_safetensors *file);
TSR_API int32_t tsr_safetensors_count(const tsr_safetensors *file);
// Entry |index| in file order; strings and sizes owned by |file|.
TSR_API TSR_MUST_USE tsr_status tsr_safetensors_entry_get(const tsr_safetensors *file, int32_t index,
                                             const char **out_name, tsr_dtype_t *out_dtype,
                                             int32_t *out_rank, const int64_t **out_sizes);
// A new tensor on |device| with the values of entry |name|, or NULL
// (TSR_NOT_FOUND when absent).
TSR_API tsr_tensor *tsr_safetensors_tensor(const tsr_safetensors *file, const char *name,
                                           tsr_device *device);
// The metadata value of |key|, or NULL. Owned by |file|.
TSR_API const char *tsr_safetensors_metadata(const tsr_safetensors *file, const char *key);

// NumPy files (format 1.0, 2.0, 3.0; C order; little-endian <f2 <f4 <f8 <i4
// <i8 and |b1 |u1, with |u1 widened to int32). Fortran-ordered arrays,
// other dtypes, truncated or lying headers, FIFOs are refused with a message
// naming the file.
// Loads the .npy at |path| into a new tensor on |device| (caller's
// reference). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_npy_load(const char *path, tsr_device *device,
                                             tsr_tensor **out_tensor);
typedef struct tsr_npz tsr_npz;
// Opens an .npz (members stored or deflated; each inflated to no more than
// its declared size, CRC-checked and parsed) into memory. Owned by the
// caller (tsr_npz_close). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_npz_open(const char *path, tsr_npz **out_file);
// Frees |file|; NULL is ignored. Not thread-safe against other uses of |file|.
TSR_API void tsr_npz_close(tsr_npz *file);
// The number of arrays in |file|. Thread-safe.
TSR_API int32_t tsr_npz_entry_count(const tsr_npz *file);
// Array |index| in archive order: its name (".npy" removed), dtype and
// sizes, owned by |file|. Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_npz_entry_get(const tsr_npz *file, int32_t index,
                                                  const char **out_name, tsr_dtype_t *out_dtype,
                                                  int32_t *out_rank, const int64_t **out_sizes);
// A new tensor on |device| with the values of array |name| (caller's
// reference), or NULL (TSR_NOT_FOUND when absent). Thread-safe.
TSR_API tsr_tensor *tsr_npz_tensor(const tsr_npz *file, const char *name, tsr_device *device);

// Checkpoints: a module's parameters and buffers under their names, the
// optimizer's state under "optim.<state name>" with its step count, lr, each
// parameter group's lr and its schedule's state in the metadata
// ("optim.step", "optim.lr", "optim.group_lrs", "optim.schedule"), plus the
// caller's metadata pairs (epoch, RNG offset, ...). |optimizer| may be NULL.
TSR_API TSR_MUST_USE tsr_status tsr_checkpoint_save(const char *path, tsr_module *module,
                                       tsr_optimizer *optimizer, int32_t metadata_count,
                                       const char *const *metadata_keys,
                                       const char *const *metadata_values);
// Loads a checkpoint into |module| (and |optimizer| when not NULL): every
// parameter and buffer must be present with the same sizes and dtype, else
// nothing is changed and the error names the file and the tensor. The file
// is returned through |out_file| when not NULL, for its metadata.
TSR_API TSR_MUST_USE tsr_status tsr_checkpoint_load(const char *path, tsr_module *module,
                                       tsr_optimizer *optimizer, tsr_safetensors **out_file);

// DLPack (v0.8 ABI: DLManagedTensor, tessera/dlpack.h). Export shares
// |tensor|'s storage (host-accessible devices only; kDLCPU) and keeps it
// alive until the consumer calls the deleter. Import copies a kDLCPU tensor
// (any strides) into a new tensor on |device| and calls the producer's
// deleter before returning; the plugin ABI has no way to adopt foreign
// memory as a buffer. A refused import leaves |managed| with the caller.
// Thread-safe.
struct DLManagedTensor;
TSR_API TSR_MUST_USE tsr_status tsr_dlpack_export(tsr_tensor *tensor, struct DLManagedTensor **out_managed);
TSR_API tsr_tensor *tsr_dlpack_import(struct DLManagedTensor *managed, tsr_device *device);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_IO_H_
