// Tessera: datasets and batch loaders (included by tessera/tessera.h).
//
// A dataset holds N examples, each a float32 feature tensor of fixed sizes
// and an int64 label. The IDX reader (MNIST, Fashion-MNIST; raw or gzip)
// loads a whole file pair into host memory; a callback dataset asks the
// application for each example; a dataset from tensors holds several fields
// of any dtype (images, labels, token sequences), the first dimension of each
// tensor indexing the examples. A loader draws batches from a dataset in a
// seeded shuffled order, applies per-example transforms (random crop, flip,
// normalisation) and prepares the next batches on worker threads while
// the current one trains.
// Its types and TSR_API come from tessera.h, which includes this header at
// its end; included first, this header lets tessera.h include it whole.
#include "tessera/tessera.h"

#ifndef TESSERA_DATA_H_
#define TESSERA_DATA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_dataset tsr_dataset;
typedef struct tsr_loader tsr_loader;

typedef struct tsr_idx_options {
  size_t struct_size;
  double mean;      // features = (pixel / 255 - mean) / std; default 0
  double std;       // default 1
  int64_t limit;    // keep the first |limit| examples; 0: all
  uint32_t flatten; // 1: examples are [rows * cols]; 0 (default): [1, rows, cols]
  // Every label of the kept examples must be below this, or the open fails
  // naming the file and the example (a test split with labels of 255 would
  // otherwise score 0% without a word); 0 (default): not checked.
  uint32_t num_classes;
} tsr_idx_options;
TSR_API void tsr_idx_options_init(tsr_idx_options *options);

// Reads an IDX image file (magic 0x00000803, uint8 [N, rows, cols]) and an
// IDX label file (0x00000801, uint8 [N]), each raw or gzip-compressed
// (detected by content). Errors name the file and the problem (missing,
// truncated, bad magic, counts that differ, label out of range 0..255).
// The dataset is owned by the caller (tsr_dataset_destroy). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_dataset_idx_open(const char *images_path, const char *labels_path,
                                        const tsr_idx_options *options,
                                        tsr_dataset **out_dataset);
// The MNIST layout of a folder: "<dir>/train-images-idx3-ubyte[.gz]" and
// "...-labels-idx1-ubyte[.gz]" for |split| "train", "t10k-..." for "test".
TSR_API TSR_MUST_USE tsr_status tsr_dataset_mnist_open(const char *dir, const char *split,
                                          const tsr_idx_options *options,
                                          tsr_dataset **out_dataset);

// Writes example |index|'s features (numel of the example sizes, row-major)
// to |out_features| and its label to |out_label|. May be called from the
// loader's background thread, one call at a time per dataset.
typedef tsr_status (*tsr_dataset_get_fn)(void *user, int64_t index, float *out_features,
                                         int64_t *out_label);
// A dataset of |count| examples of sizes |example_sizes| served by |get|;
// |user| must outlive the dataset.
TSR_API TSR_MUST_USE tsr_status tsr_dataset_callback_create(int64_t count, int32_t rank,
                                               const int64_t *example_sizes,
                                               tsr_dataset_get_fn get, void *user,
                                               tsr_dataset **out_dataset);
TSR_API void tsr_dataset_destroy(tsr_dataset *dataset);
TSR_API int64_t tsr_dataset_size(const tsr_dataset *dataset);
// Sizes of one example's features (owned by the dataset).
TSR_API int32_t tsr_dataset_example_rank(const tsr_dataset *dataset);
TSR_API const int64_t *tsr_dataset_example_sizes(const tsr_dataset *dataset);
// Example |index| into caller memory (numel floats and one label).
TSR_API TSR_MUST_USE tsr_status tsr_dataset_get(const tsr_dataset *dataset, int64_t index,
                                   float *out_features, int64_t *out_label);

// Datasets of several fields of any dtype (images float32, labels int64,
// token sequences int64, ...): at most TSR_DATASET_MAX_FIELDS.
#define TSR_DATASET_MAX_FIELDS 16
// A dataset over |count| tensors whose first dimension is the example index
// (all the same size N >= 1); example i of field f is tensors[f][i]. The
// values are copied to host memory: the tensors may be released after.
// Owned by the caller (tsr_dataset_destroy). Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_dataset_from_tensors(int32_t count, tsr_tensor *const *tensors,
                                                         tsr_dataset **out_dataset);
// Fields of one example: 2 for IDX and callback datasets (float32
// features, scalar int64 label). Thread-safe.
TSR_API int32_t tsr_dataset_field_count(const tsr_dataset *dataset);
// Field |field|'s dtype and the sizes of one example (owned by the dataset).
// Thread-safe.
TSR_API TSR_MUST_USE tsr_status tsr_dataset_field_get(const tsr_dataset *dataset, int32_t field,
                                                      tsr_dtype_t *out_dtype, int32_t *out_rank,
                                                      const int64_t **out_sizes);

// Per-example transforms of a float32 image field ([C, H, W] or [H, W]),
// applied by the loader in order, on the thread that fills a batch (one of
// the loader's workers when prefetch is on). Random choices come from a stream
// keyed by (loader seed, epoch, example index): reproducible, with or
// without prefetch, with any number of workers, and after tsr_loader_seek.
enum {
  TSR_TRANSFORM_RANDOM_CROP = 1,  // pad |padding| zeros each side, crop height x width
  TSR_TRANSFORM_RANDOM_HFLIP = 2, // reverse W with |probability|
  TSR_TRANSFORM_NORMALIZE = 3,    // (x - mean[c]) / std[c]
};
typedef struct tsr_transform {
  uint32_t kind;
  int32_t field;
  int64_t height, width, padding;  // RANDOM_CROP
  double probability;              // RANDOM_HFLIP
  int32_t channels;                // NORMALIZE: C (1 for [H, W])
  const float *mean, *std;         // NORMALIZE: |channels| each; copied by the loader
} tsr_transform;
// Builders of the three transforms. Thread-safe.
TSR_API tsr_transform tsr_transform_random_crop(int32_t field, int64_t height, int64_t width,
                                                int64_t padding);
TSR_API tsr_transform tsr_transform_random_hflip(int32_t field, double probability);
TSR_API tsr_transform tsr_transform_normalize(int32_t field, int32_t channels, const float *mean,
                                              const float *std);

typedef struct tsr_loader_options {
  size_t struct_size;
  int64_t batch_size;   // default 64
  uint64_t seed;        // shuffle seed; epoch e uses a permutation of (seed, e)
  uint32_t shuffle;     // default 1
  uint32_t drop_last;   // default 0: the last batch may be smaller
  uint32_t prefetch;    // default 1: a background thread prepares the next batch
  uint32_t reserved;
  // Added with multi-field datasets: |transform_count| transforms, copied
  // by tsr_loader_create (default none).
  const tsr_transform *transforms;
  uint32_t transform_count;
  // Added with worker threads: the threads that fill batches when prefetch
  // is on, each a whole batch, in a ring of workers + 1 batches; the batches
  // are the same for every count. 0 or 1 (default): one prefetch thread;
  // above 1 needs prefetch, and is clamped to the online CPUs. The workers
  // read the dataset and run the transforms only: they never call an op, so
  // they never enter the core's thread pool; to keep them off the pool's
  // cores, create the context with num_threads = cores - workers. A callback
  // dataset's get is still called one call at a time.
  uint32_t workers;
} tsr_loader_options;
TSR_API void tsr_loader_options_init(tsr_loader_options *options);

// A loader over |dataset| (borrowed; it must outlive the loader) producing
// batches on |device|. Starts at epoch 0, batch 0. Owned by the caller.
TSR_API TSR_MUST_USE tsr_status tsr_loader_create(tsr_dataset *dataset, tsr_device *device,
                                     const tsr_loader_options *options, tsr_loader **out_loader);
// Stops the workers (each finishes the batch it is filling; none is
// delivered), joins them and frees the loader, mid-epoch too. NULL is
// ignored.
TSR_API void tsr_loader_destroy(tsr_loader *loader);
// The next batch of the current epoch: features [B, example sizes...] float32
// and labels [B] int64 (for a two-field dataset from tensors: its two
// fields, of their dtypes), new tensors on the loader's device (caller's
// references; adopted by an open scope like any result). TSR_NOT_FOUND (and
// NULLs) when the epoch is exhausted; the following call starts the next
// epoch. Not thread-safe: one thread draws from a loader.
TSR_API TSR_MUST_USE tsr_status tsr_loader_next(tsr_loader *loader, tsr_tensor **out_features,
                                   tsr_tensor **out_labels);
// The next batch of every field: |count| must be the dataset's field count;
// out_tensors[f] is [B, field f's example sizes after transforms...] of the
// field's dtype (caller's references). TSR_NOT_FOUND (and NULLs) at the end
// of the epoch, as tsr_loader_next. Not thread-safe: one thread draws.
TSR_API TSR_MUST_USE tsr_status tsr_loader_next_fields(tsr_loader *loader, int32_t count,
                                                       tsr_tensor **out_tensors);
TSR_API int64_t tsr_loader_batch_count(const tsr_loader *loader);   // batches per epoch
TSR_API int64_t tsr_loader_epoch(const tsr_loader *loader);
TSR_API int64_t tsr_loader_position(const tsr_loader *loader);      // batches taken this epoch
// Moves to batch |position| of |epoch| (for resuming a checkpoint): the next
// batch is exactly the one an uninterrupted run would have drawn there.
TSR_API TSR_MUST_USE tsr_status tsr_loader_seek(tsr_loader *loader, int64_t epoch, int64_t position);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TESSERA_DATA_H_
