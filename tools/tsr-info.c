// tsr-info: what Tessera finds on this machine. Loaded plugins, candidates
// that were rejected and why, devices with their properties and allocator
// statistics, the default device, and which ops each device runs per dtype.
// The first thing to run when a device is missing or slower than expected.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <tessera/engine_cache.h>
#include <tessera/tessera.h>

// Column order of the op support matrix; indexed by tsr_dtype_t.
static const char *const kDtypeNames[TSR_DTYPE_COUNT] = {"f32", "f64", "bf16", "f16",
                                                         "i32", "i64", "bool"};

static void usage(FILE *out, const char *argv0) {
  fprintf(out,
          "usage: %s [--plugin PATH] [--explicit-only] [--selectors]\n"
          "\n"
          "Shows the Tessera library, its plugins (and rejected candidates with the\n"
          "reason), devices, the default device and an op support matrix.\n"
          "\n"
          "  --plugin PATH     plugin files or folders (colon-separated) searched first\n"
          "  --explicit-only   search only --plugin, not TSR_PLUGIN_PATH or the defaults\n"
          "  --selectors       also show support per selector value (UNARY's functions,\n"
          "                    REDUCE's kinds, MATMUL's activations and bias, ...)\n"
          "  --help            this text\n"
          "\n"
          "Environment: TSR_DEVICE, TSR_PLUGIN_PATH, TSR_NUM_THREADS, TSR_LOG_LEVEL,\n"
          "TSR_ENGINE_CACHE, TSR_ENGINE_CACHE_DIR.\n",
          argv0);
}

// Writes |bytes| as "1.5 GiB" into |buf|.
static const char *format_bytes(uint64_t bytes, char *buf, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = (double)bytes;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) {
    snprintf(buf, size, "%" PRIu64 " B", bytes);
  } else {
    snprintf(buf, size, "%.1f %s", value, units[unit]);
  }
  return buf;
}

static void print_device_flags(uint32_t flags) {
  static const struct {
    uint32_t bit;
    const char *name;
  } kFlags[] = {
      {TSR_DEVICE_ASYNC, "async"},
      {TSR_DEVICE_EVENTS, "events"},
      {TSR_DEVICE_TIMING_EVENTS, "timing-events"},
      {TSR_DEVICE_HOST_ACCESSIBLE, "host-accessible"},
  };
  uint32_t known = 0;
  int any = 0;
  for (size_t i = 0; i < sizeof(kFlags) / sizeof(kFlags[0]); ++i) {
    known |= kFlags[i].bit;
    if (flags & kFlags[i].bit) {
      printf(" %s", kFlags[i].name);
      any = 1;
    }
  }
  // A newer plugin may set flags this tool predates; show rather than hide them.
  if (flags & ~known) {
    printf(" unknown(0x%" PRIx32 ")", flags & ~known);
    any = 1;
  }
  if (!any)
    printf(" none (synchronous, no events)");
  printf("\n");
}

static void print_dtype_mask(uint32_t mask) {
  for (int d = 0; d < TSR_DTYPE_COUNT; ++d) {
    if (mask & TSR_DTYPE_BIT(d))
      printf(" %s", kDtypeNames[d]);
  }
  if (mask & ~((1u << TSR_DTYPE_COUNT) - 1u)) {
    printf(" unknown(0x%" PRIx32 ")", mask & ~((1u << TSR_DTYPE_COUNT) - 1u));
  }
  printf("\n");
}

// Where plugins keep the engines they measured (the engine cache) and how
// many decisions it holds for this machine, in all or for |plugin_name|.
static void print_engine_cache(const tsr_context *context, const char *plugin_name,
                               const char *indent) {
  tsr_engine_cache_info info = {.struct_size = sizeof(info)};
  if (tsr_engine_cache_info_get(context, plugin_name, &info) != TSR_OK) {
    printf("%sengine cache: unavailable: %s\n", indent, tsr_last_error());
  } else if (info.folder == NULL) {
    if (plugin_name == NULL)  // said once, not again per plugin
      printf("%sengine cache: off (%s)\n", indent, info.off_reason);
  } else if (plugin_name != NULL) {
    printf("%sengine cache: %" PRId64 " decisions for this machine\n", indent, info.decisions);
  } else {
    printf("%sengine cache: %s (%" PRId64 " decisions for this machine in %" PRId32 " files)\n",
           indent, info.folder, info.decisions, info.files);
  }
}

static void print_plugins(const tsr_context *context) {
  int32_t count = tsr_context_plugin_count(context);
  printf("\nPlugins loaded: %" PRId32 "\n", count);
  for (int32_t i = 0; i < count; ++i) {
    tsr_plugin_info info = {.struct_size = sizeof(info)};
    tsr_status status = tsr_context_plugin_info_get(context, i, &info);
    if (status != TSR_OK) {
      printf("  #%" PRId32 ": cannot describe: %s\n", i, tsr_last_error());
      continue;
    }
    printf("  %s %s (%s)\n", info.name, info.version, info.vendor);
    printf("    path:       %s\n", info.path);
    printf("    ABI:        %" PRIu32 ".%" PRIu32 "\n", info.abi_major, info.abi_minor);
    printf("    build:      %s\n", info.build_info && info.build_info[0] ? info.build_info : "-");
    printf("    devices:   ");
    int32_t listed = 0;
    for (int32_t d = 0; d < tsr_context_device_count(context); ++d) {
      const tsr_device *device = tsr_context_device_get(context, d);
      const char *plugin = device ? tsr_device_plugin_name(device) : NULL;
      if (plugin && strcmp(plugin, info.name) == 0) {
        printf(" %s", tsr_device_name(device));
        ++listed;
      }
    }
    if (listed == 0)
      printf(" none");
    printf("\n");
    print_engine_cache(context, info.name, "    ");
  }
}

static void print_rejected(const tsr_context *context) {
  int32_t count = tsr_context_rejected_count(context);
  printf("\nRejected candidates: %" PRId32 "\n", count);
  for (int32_t i = 0; i < count; ++i) {
    tsr_rejected_plugin rejected = {.struct_size = sizeof(rejected)};
    if (tsr_context_rejected_get(context, i, &rejected) != TSR_OK) {
      printf("  #%" PRId32 ": cannot describe: %s\n", i, tsr_last_error());
      continue;
    }
    printf("  %s\n", rejected.path);
    printf("    %s: %s\n", tsr_status_name(rejected.status), rejected.reason);
  }
}

static void print_device(const tsr_device *device, int is_default) {
  char buf[32];
  printf("  %s%s (plugin %s)\n", tsr_device_name(device), is_default ? " [default]" : "",
         tsr_device_plugin_name(device));
  tsr_device_props props = {.struct_size = sizeof(props)};
  if (tsr_device_props_get(device, &props) != TSR_OK) {
    printf("    properties: unavailable: %s\n", tsr_last_error());
  } else {
    printf("    name:           %s\n", props.name ? props.name : "-");
    printf("    memory:         %s (%" PRIu64 " bytes)\n",
           format_bytes(props.memory_bytes, buf, sizeof(buf)), props.memory_bytes);
    printf("    compute units:  %" PRIu32 "\n", props.compute_units);
    printf("    flags:         ");
    print_device_flags(props.flags);
    printf("    dtypes:        ");
    print_dtype_mask(props.dtype_mask);
    printf("    base alignment: %" PRIu32 " bytes\n", props.base_alignment);
    printf("    priority:       %" PRId32 " (the highest is the default device)\n", props.priority);
  }
  tsr_allocator_stats stats = {.struct_size = sizeof(stats)};
  if (tsr_device_allocator_stats_get(device, &stats) != TSR_OK) {
    printf("    allocator:      unavailable: %s\n", tsr_last_error());
  } else {
    char reserved[32], peak[32];
    printf("    allocator:      %s in use, %s reserved, %s peak; %" PRIu64 " allocs, %" PRIu64
           " frees, %" PRIu64 " from the system\n",
           format_bytes(stats.bytes_in_use, buf, sizeof(buf)),
           format_bytes(stats.bytes_reserved, reserved, sizeof(reserved)),
           format_bytes(stats.peak_bytes_in_use, peak, sizeof(peak)), stats.alloc_count,
           stats.free_count, stats.system_alloc_count);
  }
}

static void print_devices(const tsr_context *context) {
  int32_t count = tsr_context_device_count(context);
  const tsr_device *default_device = tsr_context_default_device(context);
  printf("\nDevices: %" PRId32 "\n", count);
  for (int32_t i = 0; i < count; ++i) {
    const tsr_device *device = tsr_context_device_get(context, i);
    if (device)
      print_device(device, device == default_device);
  }
  printf("\nDefault device: %s\n", default_device ? tsr_device_name(default_device) : "none");
}

// Width of a device's block in the matrix: one mark per dtype, space-separated.
enum { kMarksWidth = 2 * TSR_DTYPE_COUNT - 1, kOpColumnWidth = 24 };

static int device_column_width(const tsr_device *device) {
  int name = (int)strlen(tsr_device_name(device));
  return (name > kMarksWidth ? name : kMarksWidth) + 2;
}

// Prints |text| in device column |index| of |count|, padded to the column's
// width except in the last column, so that lines carry no trailing blanks.
static void print_device_cell(tsr_context *context, int32_t index, int32_t count,
                              const char *text) {
  if (index + 1 == count) {
    fputs(text, stdout);
  } else {
    printf("%-*s", device_column_width(tsr_context_device_get(context, index)), text);
  }
}

// A plain "no": the plugin does not implement the op for the dtype
// (unsupported), or the catalogue does not define it for the dtype (invalid
// argument: matmul of int32).
static int is_no(tsr_status status) {
  return status == TSR_UNSUPPORTED || status == TSR_INVALID_ARGUMENT;
}

// Prints the matrix; any other answer is listed after it with its message,
// since it means a broken device or plugin.
static void print_op_matrix(tsr_context *context) {
  int32_t count = tsr_context_device_count(context);
  if (count > TSR_MAX_DEVICES)
    count = TSR_MAX_DEVICES;
  int32_t ops_supported[TSR_MAX_DEVICES] = {0};
  int32_t pairs_supported[TSR_MAX_DEVICES] = {0};
  int32_t failures = 0;

  printf("\nOp support (Y supported, . not, ! the query failed)\n");
  printf("  columns per device: ");
  for (int d = 0; d < TSR_DTYPE_COUNT; ++d) printf("%s%s", d ? " " : "", kDtypeNames[d]);
  printf("\n  %-*s", kOpColumnWidth, "op");
  for (int32_t i = 0; i < count; ++i) {
    print_device_cell(context, i, count, tsr_device_name(tsr_context_device_get(context, i)));
  }
  printf("\n");

  for (tsr_op_id_t op = 1; op < TSR_OP_COUNT; ++op) {
    printf("  %-*s", kOpColumnWidth, tsr_op_name(op));
    for (int32_t i = 0; i < count; ++i) {
      tsr_device *device = tsr_context_device_get(context, i);
      int any = 0;
      char marks[kMarksWidth + 1];
      for (tsr_dtype_t dtype = 0; dtype < TSR_DTYPE_COUNT; ++dtype) {
        tsr_status status = tsr_device_op_supported(device, op, dtype);
        char mark = status == TSR_OK ? 'Y' : is_no(status) ? '.' : '!';
        if (status == TSR_OK) {
          any = 1;
          ++pairs_supported[i];
        } else if (!is_no(status)) {
          ++failures;
        }
        marks[2 * dtype] = mark;
        marks[2 * dtype + 1] = ' ';
      }
      marks[kMarksWidth] = '\0';
      ops_supported[i] += any;
      print_device_cell(context, i, count, marks);
    }
    printf("\n");
  }

  printf("  %-*s", kOpColumnWidth, "supported ops");
  for (int32_t i = 0; i < count; ++i) {
    char cell[32];
    snprintf(cell, sizeof(cell), "%" PRId32 "/%d", ops_supported[i], TSR_OP_COUNT - 1);
    print_device_cell(context, i, count, cell);
  }
  printf("\n  %-*s", kOpColumnWidth, "supported op x dtype");
  for (int32_t i = 0; i < count; ++i) {
    char cell[32];
    snprintf(cell, sizeof(cell), "%" PRId32 "/%d", pairs_supported[i],
             (TSR_OP_COUNT - 1) * TSR_DTYPE_COUNT);
    print_device_cell(context, i, count, cell);
  }
  printf("\n");

  if (failures == 0)
    return;
  // Asked again rather than stored: this path only runs when something is
  // broken, and the messages live in per-thread storage.
  printf("\nQueries that failed: %" PRId32 "\n", failures);
  for (int32_t i = 0; i < count; ++i) {
    tsr_device *device = tsr_context_device_get(context, i);
    for (tsr_op_id_t op = 1; op < TSR_OP_COUNT; ++op) {
      for (tsr_dtype_t dtype = 0; dtype < TSR_DTYPE_COUNT; ++dtype) {
        tsr_status status = tsr_device_op_supported(device, op, dtype);
        if (status != TSR_OK && !is_no(status)) {
          printf("  %s %s %s: %s: %s\n", tsr_device_name(device), tsr_op_name(op),
                 kDtypeNames[dtype], tsr_status_name(status), tsr_last_error());
        }
      }
    }
  }
}

// The support of every value of every op's selector (tessera/ops.h), per
// device and dtype: a plugin may implement UNARY's RELU and not NEG.
static void print_selector_matrix(tsr_context *context) {
  int32_t count = tsr_context_device_count(context);
  if (count > TSR_MAX_DEVICES)
    count = TSR_MAX_DEVICES;
  printf("\nSupport per selector value (Y supported, . not, ! the query failed)\n");
  enum { kLabelWidth = 32 };
  printf("  %-*s", kLabelWidth, "op and value");
  for (int32_t i = 0; i < count; ++i) {
    print_device_cell(context, i, count, tsr_device_name(tsr_context_device_get(context, i)));
  }
  printf("\n");
  for (tsr_op_id_t op = 1; op < TSR_OP_COUNT; ++op) {
    for (int32_t k = 0; k < tsr_op_selector_count(op); ++k) {
      char label[64];
      snprintf(label, sizeof(label), "%s %s", tsr_op_name(op), tsr_op_selector_name(op, k));
      printf("  %-*s", kLabelWidth, label);
      for (int32_t i = 0; i < count; ++i) {
        tsr_device *device = tsr_context_device_get(context, i);
        char marks[kMarksWidth + 1];
        for (tsr_dtype_t dtype = 0; dtype < TSR_DTYPE_COUNT; ++dtype) {
          tsr_status status = tsr_device_op_selector_supported(device, op, dtype, k);
          marks[2 * dtype] = status == TSR_OK ? 'Y' : is_no(status) ? '.' : '!';
          marks[2 * dtype + 1] = ' ';
        }
        marks[kMarksWidth] = '\0';
        print_device_cell(context, i, count, marks);
      }
      printf("\n");
    }
  }
}

// One representative call of an op, to show which engine a device picks.
typedef struct engine_probe {
  const char *label;
  tsr_op_id_t op;
  int32_t num_inputs;
  int32_t num_outputs;
  int32_t ranks[4];
  int64_t sizes[4][4];
  const void *attrs;
} engine_probe;

// The engine each device's plan uses for a few typical calls: what
// TSR_TRACE=1 prints per op, without running anything.
static void print_engines(tsr_context *context) {
  static const tsr_binary_attrs add = {sizeof(tsr_binary_attrs), TSR_BINARY_ADD, 0, 1.0};
  static const tsr_matmul_attrs mm = {sizeof(tsr_matmul_attrs), 1.0, 0.0, TSR_ACTIVATION_NONE, 0};
  static const tsr_conv2d_attrs conv = {sizeof(tsr_conv2d_attrs), {1, 1}, {1, 1}, {1, 1},
                                        {1, 1}, 1, TSR_ACTIVATION_NONE, 0};
  static const tsr_softmax_attrs sm = {sizeof(tsr_softmax_attrs), 1, 0};
  static const engine_probe probes[] = {
      {"add f32 [16]", TSR_OP_BINARY, 2, 1, {1, 1, 1}, {{16}, {16}, {16}}, &add},
      {"add f32 [4096,4096]", TSR_OP_BINARY, 2, 1, {2, 2, 2},
       {{4096, 4096}, {4096, 4096}, {4096, 4096}}, &add},
      {"matmul f32 8x8x8", TSR_OP_MATMUL, 2, 1, {2, 2, 2}, {{8, 8}, {8, 8}, {8, 8}}, &mm},
      {"matmul f32 1024x1024x1024", TSR_OP_MATMUL, 2, 1, {2, 2, 2},
       {{1024, 1024}, {1024, 1024}, {1024, 1024}}, &mm},
      {"conv2d f32 3x3 [64,32,28,28]->64", TSR_OP_CONV2D, 2, 1, {4, 4, 4},
       {{64, 32, 28, 28}, {64, 32, 3, 3}, {64, 64, 28, 28}}, &conv},
      {"softmax f32 [256,1000]", TSR_OP_SOFTMAX, 1, 1, {2, 2}, {{256, 1000}, {256, 1000}}, &sm},
  };
  printf("\nEngines (the plan each device makes for a typical call):\n");
  for (int32_t d = 0; d < tsr_context_device_count(context); ++d) {
    tsr_device *device = tsr_context_device_get(context, d);
    printf("  %s\n", tsr_device_name(device));
    for (size_t p = 0; p < sizeof(probes) / sizeof(probes[0]); ++p) {
      const engine_probe *probe = &probes[p];
      tsr_tensor *tensors[4] = {NULL};
      int ok = 1;
      for (int32_t t = 0; t < probe->num_inputs + probe->num_outputs; ++t) {
        tensors[t] = tsr_tensor_empty(device, TSR_FLOAT32, probe->ranks[t], probe->sizes[t]);
        ok = ok && tensors[t] != NULL;
      }
      const char *engine = NULL;
      tsr_status status = ok ? tsr_op_engine_get(probe->op, probe->num_inputs, tensors,
                                                 probe->num_outputs, tensors + probe->num_inputs,
                                                 probe->attrs, &engine)
                             : tsr_last_status();
      if (status == TSR_OK) {
        printf("    %-34s %s\n", probe->label, engine);
      } else {
        printf("    %-34s (%s: %s)\n", probe->label, tsr_status_name(status), tsr_last_error());
        tsr_context_error_clear(context);
      }
      for (int32_t t = 0; t < 4; ++t) tsr_tensor_release(tensors[t]);
    }
  }
}

int main(int argc, char **argv) {
  tsr_context_options options;
  tsr_context_options_init(&options);
  int selectors = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout, argv[0]);
      return 0;
    } else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
      options.plugin_path = argv[++i];
    } else if (strncmp(argv[i], "--plugin=", 9) == 0) {
      options.plugin_path = argv[i] + 9;
    } else if (strcmp(argv[i], "--explicit-only") == 0) {
      options.flags |= TSR_CONTEXT_EXPLICIT_PLUGINS_ONLY;
    } else if (strcmp(argv[i], "--selectors") == 0) {
      selectors = 1;
    } else {
      fprintf(stderr, "%s: unknown or incomplete option '%s'\n", argv[0], argv[i]);
      usage(stderr, argv[0]);
      return 2;
    }
  }

  tsr_context *context = NULL;
  tsr_status status = tsr_context_create(&options, &context);
  if (status != TSR_OK) {
    fprintf(stderr, "%s: cannot create a context: %s: %s\n", argv[0], tsr_status_name(status),
            tsr_last_error());
    return 1;
  }

  printf("Tessera %s (tsr-info built against Tessera %d.%d.%d, plugin ABI %d.%d)\n", tsr_version(),
         TSR_VERSION_MAJOR, TSR_VERSION_MINOR, TSR_VERSION_PATCH, TSR_ABI_VERSION_MAJOR,
         TSR_ABI_VERSION_MINOR);
  printf("threads: %" PRId32 "\n", tsr_context_thread_count(context));
  print_engine_cache(context, NULL, "");
  print_plugins(context);
  print_rejected(context);
  print_devices(context);
  print_op_matrix(context);
  if (selectors)
    print_selector_matrix(context);
  print_engines(context);

  tsr_context_destroy(context);
  return 0;
}
