// The elementwise family: FILL COPY CAST UNARY UNARY_BACKWARD BINARY COMPARE
// WHERE CLAMP SGD_UPDATE ADAM_UPDATE (kernels/elementwise.cl) and RNG_FILL
// (kernels/rng.cl).
//
// Shapes come from ref's analysis: plan->ref->u.ew (u.optim.shape for the
// optimizers) is the collapsed loop nest over the operands, inputs then
// outputs, in the output's memory order. From it a plan picks one of three
// kernels of one program:
//   contig  every operand steps by one element along a single dimension, or
//           is a scalar broadcast (stride 0): a mask replaces the index
//   rows    a long inner dimension (>= one work-group block): each item
//           finds its row once, then steps by the operands' inner strides
//   flat    short rows: each element finds its own row
// The program is compiled per (op, fn, dtypes, index width); shapes, strides
// and offsets are kernel arguments or a constant buffer made at plan time,
// so one binary serves every shape. Scalars (alpha, bounds, optimizer
// constants, fill bits) are ref's, already converted to the compute type,
// so the arithmetic is ref's own.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ocl.h"
#include "tsr_cpu/cpu_kernels.h"  // struct tsr_plugin_plan, tsr_cpu_ew_plan, tsr_cpu_optim_plan
#include "tessera/plugin_kit.h"

// Kinds as kernels/elementwise.cl numbers them.
enum {
  TSR_OCL_EW_FILL = 1,
  TSR_OCL_EW_COPY = 2,
  TSR_OCL_EW_CAST = 3,
  TSR_OCL_EW_UNARY = 4,
  TSR_OCL_EW_UNARY_BACKWARD = 5,
  TSR_OCL_EW_BINARY = 6,
  TSR_OCL_EW_COMPARE = 7,
  TSR_OCL_EW_WHERE = 8,
  TSR_OCL_EW_CLAMP = 9,
  TSR_OCL_EW_SGD = 10,
  TSR_OCL_EW_ADAM = 11,
};

typedef enum {
  TSR_OCL_EW_VARIANT_CONTIG = 0,
  TSR_OCL_EW_VARIANT_ROWS = 1,
  TSR_OCL_EW_VARIANT_FLAT = 2,
  TSR_OCL_EW_VARIANT_RNG = 3,
} tsr_ocl_ew_variant;

// Elements per work-item (EW_VEC, EW_ROW_VEC, RNG_VEC in the kernels; they
// must agree) and the preferred work-group size: 1024 elements per group
// keeps a GPU's schedulers full from ~100k elements up, and the index maths
// is paid once per 4 elements. RNG_FILL makes one element per item: its 20
// multiplies per element dwarf the index maths.
#define TSR_OCL_EW_VEC 4
#define TSR_OCL_EW_ROW_VEC 4
#define TSR_OCL_RNG_VEC 1
#define TSR_OCL_EW_LOCAL 256
// Elements below which a 32-bit index is safe with every block's slack.
#define TSR_OCL_EW_IDX32_LIMIT ((uint64_t)1 << 31)
#define TSR_OCL_EW_MAX_PARAMS 12
// Longs per dimension in the shape buffer: the size, then four strides.
#define TSR_OCL_EW_DIM_LONGS 5

typedef struct tsr_ocl_ew_state {
  tsr_ocl_kernel *kernel;   // NULL when there is nothing to do (0 elements)
  cl_mem shape;             // rows, flat, strided rng: see TSR_OCL_EW_DIM_LONGS
  int32_t variant;          // tsr_ocl_ew_variant
  int32_t nops;             // operands the kernel takes: exec->mem[0..nops)
  int32_t idx64;            // IDX is ulong
  int32_t outer_nd;         // rows/flat: outer dimensions in |shape|; rng: dimensions
  uint64_t count;           // contig, flat, rng: elements; rows: the inner size
  uint64_t inner;           // flat: the inner size
  uint64_t blocks_per_row;  // rows
  size_t global;
  size_t local;
  uint64_t mask[TSR_CPU_EW_MAX_OPERANDS];  // contig: all ones, or 0 for a broadcast scalar
  int64_t step[TSR_CPU_EW_MAX_OPERANDS];   // rows, flat: inner step in elements
  // rng
  uint64_t counter;
  uint32_t key[2];
  // Scalar parameters after the operands, each |param_size| bytes at |params|.
  int32_t num_params;
  uint8_t param_size[TSR_OCL_EW_MAX_PARAMS];
  _Alignas(8) unsigned char params[TSR_OCL_EW_MAX_PARAMS][8];
} tsr_ocl_ew_state;
_Static_assert(sizeof(tsr_ocl_ew_state) <= TSR_OCL_PLAN_STATE_BYTES, "plan state too large");

static tsr_ocl_ew_state *ew_state(tsr_ocl_plan *plan) {
  return (tsr_ocl_ew_state *)plan->state;
}
static const tsr_ocl_ew_state *ew_state_const(const tsr_ocl_plan *plan) {
  return (const tsr_ocl_ew_state *)plan->state;
}

// ---------------------------------------------------------------------------
// Dtypes.


// The OpenCL C type of a dtype's values.
static const char *ew_cl_type(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      return "float";
    case TSR_FLOAT64:
      return "double";
    case TSR_INT32:
      return "int";
    case TSR_INT64:
      return "long";
    default:
      return "uchar";
  }
}

// The OpenCL C type that moves an element's bits.
static const char *ew_bits_type(uint32_t elem_size) {
  switch (elem_size) {
    case 1:
      return "uchar";
    case 2:
      return "ushort";
    case 4:
      return "uint";
    default:
      return "ulong";
  }
}

// CAST's tag of a dtype in the kernels' cvt_<from>_<to> names.
static const char *ew_cast_tag(tsr_dtype_t dtype) {
  switch (dtype) {
    case TSR_FLOAT32:
      return "f32";
    case TSR_FLOAT64:
      return "f64";
    case TSR_INT32:
      return "i32";
    case TSR_INT64:
      return "i64";
    default:
      return "b8";
  }
}

static int ew_is_float(tsr_dtype_t dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT64;
}
static int ew_is_int(tsr_dtype_t dtype) {
  return dtype == TSR_INT32 || dtype == TSR_INT64;
}

// TSR_OK when |device| computes on |dtype| (operand |name| of |op|).
static tsr_status ew_dtype_check(const tsr_ocl_device *device, const char *op, const char *name,
                                 tsr_dtype_t dtype) {
  if (dtype == TSR_BFLOAT16 || dtype == TSR_FLOAT16) {
    return tsr_ocl_error(TSR_UNSUPPORTED,
                         "opencl: %s: %s is %s; the elementwise kernels take float32, float64, "
                         "int32, int64 and bool",
                         op, name, tsr_kit_dtype_name(dtype));
  }
  if (dtype == TSR_FLOAT64 && !(device->caps & TSR_OCL_CAP_FP64)) {
    return tsr_ocl_error(TSR_UNSUPPORTED, "opencl: %s: %s is float64 and %s lacks cl_khr_fp64", op,
                         name, device->name);
  }
  return TSR_OK;
}

// ---------------------------------------------------------------------------
// Plan helpers.

static void ew_param_set(tsr_ocl_ew_state *s, const void *value, size_t size) {
  memcpy(s->params[s->num_params], value, size);
  s->param_size[s->num_params] = (uint8_t)size;
  s->num_params++;
}

// Appends the scalar |v| as the kernel's CT: float, double or long by |dtype|.
static void ew_param_ct(tsr_ocl_ew_state *s, tsr_dtype_t dtype, double f64, float f32,
                        int64_t i64) {
  if (dtype == TSR_FLOAT32) {
    cl_float v = f32;
    ew_param_set(s, &v, sizeof(v));
  } else if (dtype == TSR_FLOAT64) {
    cl_double v = f64;
    ew_param_set(s, &v, sizeof(v));
  } else {
    cl_long v = i64;
    ew_param_set(s, &v, sizeof(v));
  }
}

static void ew_param_int(tsr_ocl_ew_state *s, int32_t v) {
  cl_int value = v;
  ew_param_set(s, &value, sizeof(value));
}

// Whether float32 division and sqrt can be asked to round correctly, as
// ref's (IEEE) ones do; OpenCL allows 2.5 and 3 ulp otherwise. Asked once
// per plan at init (a property query, no allocation).
static int ew_fp32_correct_div_sqrt(const tsr_ocl_device *device) {
  cl_device_fp_config config = 0;
  cl_int err =
      clGetDeviceInfo(device->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(config), &config, NULL);
  return err == CL_SUCCESS && (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
}

// Appends the options every elementwise program shares: operand types,
// compute and unsigned types, dtype class and index width.
static int ew_options_common(char *out, size_t size, const tsr_ocl_plan *plan, int32_t nops,
                             const char *const *types, tsr_dtype_t compute, int idx64) {
  int n = snprintf(out, size, "-DNOPS=%d -DNIN=%d -DIDX=%s", (int)nops, (int)plan->ref->num_inputs,
                   idx64 ? "ulong" : "uint");
  for (int32_t k = 0; k < nops && n >= 0 && (size_t)n < size; ++k) {
    n += snprintf(out + n, size - (size_t)n, " -DT%d=%s", (int)k, types[k]);
  }
  const char *ct = compute == TSR_FLOAT32 ? "float" : compute == TSR_FLOAT64 ? "double" : "long";
  if (n >= 0 && (size_t)n < size)
    n += snprintf(out + n, size - (size_t)n, " -DCT=%s", ct);
  if (n >= 0 && (size_t)n < size && ew_is_float(compute)) {
    n += snprintf(out + n, size - (size_t)n, " -DTSR_EW_FLOAT%s",
                  compute == TSR_FLOAT64 ? " -DTSR_EW_F64" : "");
    if (compute == TSR_FLOAT32 && n >= 0 && (size_t)n < size &&
        ew_fp32_correct_div_sqrt(plan->device)) {
      n += snprintf(out + n, size - (size_t)n, " -cl-fp32-correctly-rounded-divide-sqrt");
    }
  }
  if (n >= 0 && (size_t)n < size && ew_is_int(compute)) {
    n += snprintf(out + n, size - (size_t)n, " -DTSR_EW_INT -DUT=%s",
                  compute == TSR_INT32 ? "uint" : "ulong");
  }
  return n;
}

// Fills the launch geometry, the masks or steps and the shape buffer from
// |ew| (ref's collapsed nest over |nops| operands whose element sizes are
// |elem|), then creates the kernel from |options|.
static tsr_status ew_shape_init(tsr_ocl_plan *plan, const tsr_cpu_ew_plan *ew, int32_t nops,
                                const uint32_t *elem, const char *options, const char *what) {
  tsr_ocl_ew_state *s = ew_state(plan);
  const uint64_t numel = (uint64_t)ew->numel;
  s->nops = nops;
  s->idx64 = numel > TSR_OCL_EW_IDX32_LIMIT;
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;  // no atomics: the same bits every run
  if (numel == 0) {
    snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-empty", what);
    return TSR_OK;
  }
  const int32_t nd = ew->ndim;
  // Contiguous: at most one dimension, every operand stepping by one element
  // or broadcasting one (stride 0); the output is never a broadcast.
  int contig = nd <= 1;
  for (int32_t k = 0; k < nops && contig; ++k) {
    const int64_t step = ew->inner_strides[k];
    if (step != (int64_t)elem[k] && !(step == 0 && k < plan->ref->num_inputs))
      contig = 0;
  }
  const uint64_t block = (uint64_t)TSR_OCL_EW_LOCAL * TSR_OCL_EW_ROW_VEC;
  const uint64_t inner = nd >= 1 ? (uint64_t)ew->sizes[nd - 1] : 1;
  const char *kernel_name;
  if (contig) {
    s->variant = TSR_OCL_EW_VARIANT_CONTIG;
    kernel_name = "ew_contig";
    for (int32_t k = 0; k < nops; ++k) s->mask[k] = ew->inner_strides[k] == 0 ? 0 : UINT64_MAX;
  } else {
    s->variant = inner >= block / 2 ? TSR_OCL_EW_VARIANT_ROWS : TSR_OCL_EW_VARIANT_FLAT;
    kernel_name = s->variant == TSR_OCL_EW_VARIANT_ROWS ? "ew_rows" : "ew_flat";
    for (int32_t k = 0; k < nops; ++k) s->step[k] = ew->inner_strides[k] / (int64_t)elem[k];
    s->outer_nd = nd - 1;
    cl_long shape[TSR_MAX_RANK * TSR_OCL_EW_DIM_LONGS] = {0};
    for (int32_t d = 0; d < nd - 1; ++d) {
      shape[d * TSR_OCL_EW_DIM_LONGS] = ew->sizes[d];
      for (int32_t k = 0; k < nops; ++k) {
        shape[d * TSR_OCL_EW_DIM_LONGS + 1 + k] = ew->strides[d][k] / (int64_t)elem[k];
      }
    }
    size_t bytes = sizeof(cl_long) * TSR_OCL_EW_DIM_LONGS * (size_t)(nd > 1 ? nd - 1 : 1);
    TSR_OCL_RETURN_IF_ERROR(tsr_ocl_const_buffer_create(plan->device, shape, bytes, &s->shape));
  }
  char full_options[600];
  snprintf(full_options, sizeof(full_options), "%s", options);
  if (!contig) {
    snprintf(full_options, sizeof(full_options), "%s -DOUTER_ND=%d", options, (int)s->outer_nd);
  }
  tsr_status status =
      tsr_ocl_kernel_create(plan->device, "elementwise", full_options, kernel_name, &s->kernel);
  if (status != TSR_OK) {
    s->kernel = NULL;
    if (s->shape != NULL)
      clReleaseMemObject(s->shape);
    s->shape = NULL;
    return status;
  }
  size_t local = TSR_OCL_EW_LOCAL;
  if (s->kernel->max_work_group_size > 0 && local > s->kernel->max_work_group_size) {
    local = s->kernel->max_work_group_size;
  }
  if (local > plan->device->max_work_item_sizes[0] && plan->device->max_work_item_sizes[0] > 0) {
    local = plan->device->max_work_item_sizes[0];
  }
  s->local = local;
  const uint64_t per_group =
      (uint64_t)local *
      (s->variant == TSR_OCL_EW_VARIANT_CONTIG ? TSR_OCL_EW_VEC : TSR_OCL_EW_ROW_VEC);
  uint64_t groups;
  if (s->variant == TSR_OCL_EW_VARIANT_ROWS) {
    s->count = inner;
    s->blocks_per_row = (inner + per_group - 1) / per_group;
    groups = (numel / inner) * s->blocks_per_row;
  } else {
    s->count = numel;
    s->inner = inner;
    groups = (numel + per_group - 1) / per_group;
  }
  s->global = (size_t)(groups * local);
  snprintf(plan->engine, sizeof(plan->engine), "opencl:%s-%s", what, kernel_name + 3);
  return TSR_OK;
}

// Checks every used operand's dtype.
static tsr_status ew_operands_supported(const tsr_ocl_device *device,
                                        const tsr_op_signature *signature,
                                        const struct tsr_plugin_plan *ref, int32_t count) {
  const char *op = tsr_op_name(signature->op);
  for (int32_t k = 0; k < count; ++k) {
    const tsr_cpu_operand *o = &ref->operands[k];
    if (o->extent_bytes == 0)
      continue;  // empty, or ignored: never addressed
    TSR_OCL_RETURN_IF_ERROR(ew_dtype_check(device, op, o->name, o->dtype));
  }
  return TSR_OK;
}

static tsr_status ew_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                              const struct tsr_plugin_plan *ref) {
  return ew_operands_supported(device, signature, ref, ref->num_inputs + ref->num_outputs);
}

// ---------------------------------------------------------------------------
// init for each op: options and parameters, then the shape.

static tsr_status ew_init_kind(tsr_ocl_plan *plan, int kind, int fn, int alpha_flag,
                               const char *cvt) {
  const struct tsr_plugin_plan *ref = plan->ref;
  tsr_ocl_ew_state *s = ew_state(plan);
  memset(s, 0, sizeof(*s));
  const int32_t nops = ref->num_inputs + ref->num_outputs;
  const char *types[TSR_CPU_EW_MAX_OPERANDS];
  uint32_t elem[TSR_CPU_EW_MAX_OPERANDS];
  const int bit_moves = kind == TSR_OCL_EW_FILL || kind == TSR_OCL_EW_COPY;
  for (int32_t k = 0; k < nops; ++k) {
    const tsr_cpu_operand *o = &ref->operands[k];
    elem[k] = o->elem_size;
    types[k] = bit_moves || (kind == TSR_OCL_EW_WHERE && k > 0) ? ew_bits_type(o->elem_size)
                                                                : ew_cl_type(o->dtype);
  }
  // The compute type: the first operand's (WHERE's cond is bool; only CT's
  // presence matters there).
  const tsr_dtype_t compute = ref->operands[0].dtype;
  const tsr_cpu_ew_params *p = &ref->u.ew.params;
  switch (kind) {
    case TSR_OCL_EW_FILL: {
      cl_ulong bits = p->fill_bits;
      ew_param_set(s, &bits, sizeof(bits));
      break;
    }
    case TSR_OCL_EW_UNARY:
    case TSR_OCL_EW_UNARY_BACKWARD:
    case TSR_OCL_EW_BINARY:
      ew_param_ct(s, compute, p->alpha_f64, p->alpha_f32, p->alpha_i64);
      break;
    case TSR_OCL_EW_CLAMP:
      ew_param_ct(s, compute, p->lo_f64, p->lo_f32, p->lo_i64);
      ew_param_ct(s, compute, p->hi_f64, p->hi_f32, p->hi_i64);
      break;
    default:
      break;
  }
  char options[512];
  int n = snprintf(options, sizeof(options), "-DKIND=%d -DFN=%d%s%s%s ", kind, fn,
                   alpha_flag ? " -DALPHA=1" : "", cvt ? " -DCVT=" : "", cvt ? cvt : "");
  const uint64_t numel = (uint64_t)ref->u.ew.numel;
  n += ew_options_common(options + n, sizeof(options) - (size_t)n, plan, nops, types,
                         bit_moves ? TSR_BOOL : compute, numel > TSR_OCL_EW_IDX32_LIMIT);
  if (n < 0 || (size_t)n >= sizeof(options)) {
    return tsr_ocl_error(TSR_INTERNAL, "opencl: %s: build options too long", tsr_op_name(plan->op));
  }
  return ew_shape_init(plan, &ref->u.ew, nops, elem, options, tsr_op_name(plan->op));
}

static tsr_status fill_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_FILL, 0, 0, NULL);
}

static tsr_status copy_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_COPY, 0, 0, NULL);
}

static tsr_status cast_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  const tsr_dtype_t from = plan->ref->operands[0].dtype, to = plan->ref->operands[1].dtype;
  if (from == to)
    return ew_init_kind(plan, TSR_OCL_EW_COPY, 0, 0, NULL);
  char cvt[32];
  snprintf(cvt, sizeof(cvt), "cvt_%s_%s", ew_cast_tag(from), ew_cast_tag(to));
  return ew_init_kind(plan, TSR_OCL_EW_CAST, 0, 0, cvt);
}

static tsr_status unary_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_UNARY, plan->attrs.unary.fn, 0, NULL);
}

static tsr_status unary_backward_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_UNARY_BACKWARD, plan->attrs.unary.fn, 0, NULL);
}

static tsr_status binary_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  const tsr_binary_attrs *attrs = &plan->attrs.binary;
  // alpha defaults to 1 for an older, shorter struct (as ref reads it); a +
  // 1 * b is a + b exactly, so the alpha kernel is only for alpha != 1.
  const tsr_binary_attrs *given = signature->attrs;
  const double alpha =
      given != NULL && TSR_ABI_COVERS(given, tsr_binary_attrs, alpha) ? attrs->alpha : 1.0;
  const int uses_alpha =
      (attrs->fn == TSR_BINARY_ADD || attrs->fn == TSR_BINARY_SUB) && alpha != 1.0;
  return ew_init_kind(plan, TSR_OCL_EW_BINARY, attrs->fn, uses_alpha, NULL);
}

static tsr_status compare_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_COMPARE, plan->attrs.compare.fn, 0, NULL);
}

static tsr_status where_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_WHERE, 0, 0, NULL);
}

static tsr_status clamp_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return ew_init_kind(plan, TSR_OCL_EW_CLAMP, 0, 0, NULL);
}

// SGD and Adam: ref's collapsed shape over the operands the update reads
// (grad, param and the state), and ref's constants in the compute type.
static tsr_status optim_init(tsr_ocl_plan *plan, int kind) {
  const struct tsr_plugin_plan *ref = plan->ref;
  const tsr_cpu_optim_plan *o = &ref->u.optim;
  tsr_ocl_ew_state *s = ew_state(plan);
  memset(s, 0, sizeof(*s));
  const int32_t nops = o->shape.num_operands;
  const tsr_dtype_t dtype = ref->operands[0].dtype;
  const char *types[TSR_CPU_EW_MAX_OPERANDS];
  uint32_t elem[TSR_CPU_EW_MAX_OPERANDS];
  for (int32_t k = 0; k < nops; ++k) {
    types[k] = ew_cl_type(dtype);
    elem[k] = ref->operands[k].elem_size;
  }
#define CT(field) ew_param_ct(s, dtype, o->f64.field, o->f32.field, 0)
  if (kind == TSR_OCL_EW_SGD) {
    CT(lr);
    CT(weight_decay);
    CT(momentum);
    CT(one_minus_dampening);
    ew_param_int(s, o->first_step);
    ew_param_int(s, o->nesterov);
  } else {
    CT(weight_decay);
    CT(decay);
    CT(beta1);
    CT(one_minus_beta1);
    CT(beta2);
    CT(one_minus_beta2);
    CT(bc2);
    CT(eps);
    CT(step_size);
    ew_param_int(s, o->decoupled);
  }
#undef CT
  char options[512];
  int n = snprintf(options, sizeof(options), "-DKIND=%d -DFN=0 ", kind);
  n += ew_options_common(options + n, sizeof(options) - (size_t)n, plan, nops, types, dtype,
                         (uint64_t)o->shape.numel > TSR_OCL_EW_IDX32_LIMIT);
  if (n < 0 || (size_t)n >= sizeof(options)) {
    return tsr_ocl_error(TSR_INTERNAL, "opencl: %s: build options too long", tsr_op_name(plan->op));
  }
  return ew_shape_init(plan, &o->shape, nops, elem, options,
                       kind == TSR_OCL_EW_SGD ? "sgd" : "adam");
}

static tsr_status sgd_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return optim_init(plan, TSR_OCL_EW_SGD);
}

static tsr_status adam_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  return optim_init(plan, TSR_OCL_EW_ADAM);
}

static tsr_status optim_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                                 const struct tsr_plugin_plan *ref) {
  return ew_operands_supported(device, signature, ref, ref->u.optim.shape.num_operands);
}

// ---------------------------------------------------------------------------
// Execution (shared by every elementwise op).

static tsr_status ew_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_ew_state *s = ew_state_const(plan);
  if (s->kernel == NULL || s->global == 0)
    return TSR_OK;
  tsr_ocl_arg args[6 + 3 * TSR_CPU_EW_MAX_OPERANDS + TSR_OCL_EW_MAX_PARAMS];
  int32_t na = 0;
  // Index-typed values: cl_uint or cl_ulong by the program's IDX.
  cl_uint u32[2 + TSR_CPU_EW_MAX_OPERANDS];
  cl_ulong u64[2 + TSR_CPU_EW_MAX_OPERANDS];
  int32_t nu = 0;
#define IDX_ARG(v)                                                    \
  do {                                                                \
    u32[nu] = (cl_uint)(v);                                           \
    u64[nu] = (cl_ulong)(v);                                          \
    args[na++] = s->idx64 ? (tsr_ocl_arg){sizeof(cl_ulong), &u64[nu]} \
                          : (tsr_ocl_arg){sizeof(cl_uint), &u32[nu]}; \
    nu++;                                                             \
  } while (0)
  cl_ulong offsets[TSR_CPU_EW_MAX_OPERANDS];
  cl_long steps[TSR_CPU_EW_MAX_OPERANDS];
  if (s->variant == TSR_OCL_EW_VARIANT_CONTIG) {
    IDX_ARG(s->count);
  } else if (s->variant == TSR_OCL_EW_VARIANT_ROWS) {
    IDX_ARG(s->count);
    IDX_ARG(s->blocks_per_row);
    args[na++] = TSR_OCL_ARG(s->shape);
  } else {
    IDX_ARG(s->count);
    IDX_ARG(s->inner);
    args[na++] = TSR_OCL_ARG(s->shape);
  }
  for (int32_t k = 0; k < s->nops; ++k) {
    args[na++] = TSR_OCL_ARG(exec->mem[k]);
    offsets[k] = exec->offset[k];
    args[na++] = TSR_OCL_ARG(offsets[k]);
    if (s->variant == TSR_OCL_EW_VARIANT_CONTIG) {
      IDX_ARG(s->mask[k]);
    } else {
      steps[k] = s->step[k];
      args[na++] = TSR_OCL_ARG(steps[k]);
    }
  }
#undef IDX_ARG
  for (int32_t i = 0; i < s->num_params; ++i) {
    args[na++] = (tsr_ocl_arg){s->param_size[i], s->params[i]};
  }
  const size_t global = s->global, local = s->local;
  return tsr_ocl_launch(exec, s->kernel, 1, &global, &local, na, args);
}

static void ew_fini(tsr_ocl_plan *plan) {
  tsr_ocl_ew_state *s = ew_state(plan);
  tsr_ocl_kernel_destroy(s->kernel);
  s->kernel = NULL;
  if (s->shape != NULL)
    clReleaseMemObject(s->shape);
  s->shape = NULL;
}

// ---------------------------------------------------------------------------
// RNG_FILL.

#define TSR_OCL_RNG_TWO_POW_24 16777216.0

// Without fp64 UNIFORM float32 is exact only as (x0 >> 8) * b * 2^-24 with
// a == 0 and b a power of two (ref's double maths is then exact too); any
// other range would round differently from ref, so it is refused.
static int rng_uniform_exact(double a, double b) {
  if (a != 0.0 || !(b >= 0x1p-100 && b <= 0x1p100))
    return 0;
  int exponent = 0;
  return frexp(b, &exponent) == 0.5;
}

static tsr_status rng_supports(const tsr_ocl_device *device, const tsr_op_signature *signature,
                               const struct tsr_plugin_plan *ref) {
  const tsr_cpu_rng_plan *r = &ref->u.rng;
  const tsr_cpu_operand *out = &ref->operands[0];
  TSR_OCL_RETURN_IF_ERROR(ew_operands_supported(device, signature, ref, 1));
  const int fp64 = (device->caps & TSR_OCL_CAP_FP64) != 0;
  if (r->distribution == TSR_RNG_NORMAL && !fp64) {
    return tsr_ocl_error(TSR_UNSUPPORTED,
                         "opencl: rng_fill: normal is computed in float64 and %s lacks "
                         "cl_khr_fp64",
                         device->name);
  }
  if (r->distribution == TSR_RNG_UNIFORM && out->dtype == TSR_FLOAT32 && !fp64 &&
      !rng_uniform_exact(r->a, r->b)) {
    return tsr_ocl_error(TSR_UNSUPPORTED,
                         "opencl: rng_fill: uniform float32 over [%g, %g) is computed in float64 "
                         "and %s lacks cl_khr_fp64 (only [0, 2^k) is exact in float32)",
                         r->a, r->b, device->name);
  }
  return TSR_OK;
}

static tsr_status rng_init(tsr_ocl_plan *plan, const tsr_op_signature *signature) {
  (void)signature;
  const struct tsr_plugin_plan *ref = plan->ref;
  const tsr_cpu_rng_plan *r = &ref->u.rng;
  const tsr_cpu_operand *out = &ref->operands[0];
  tsr_ocl_ew_state *s = ew_state(plan);
  memset(s, 0, sizeof(*s));
  s->variant = TSR_OCL_EW_VARIANT_RNG;
  s->nops = 1;
  s->count = (uint64_t)out->numel;
  s->idx64 = s->count > TSR_OCL_EW_IDX32_LIMIT;
  s->counter = r->offset;
  s->key[0] = r->key[0];
  s->key[1] = r->key[1];
  snprintf(plan->engine, sizeof(plan->engine), "opencl:philox4x32-10");
  plan->info_flags = TSR_PLAN_INFO_DETERMINISTIC;
  if (s->count == 0)
    return TSR_OK;

  // out's dimensions in row-major order (the counter's order), size-1 ones
  // dropped and neighbours merged where the outer steps over the inner.
  cl_long shape[2 * TSR_MAX_RANK];
  int32_t nd = 0;
  for (int32_t d = 0; d < out->rank; ++d) {
    if (out->sizes[d] == 1)
      continue;
    if (nd > 0 && shape[2 * (nd - 1) + 1] == out->strides[d] * out->sizes[d]) {
      shape[2 * (nd - 1)] *= out->sizes[d];
      shape[2 * (nd - 1) + 1] = out->strides[d];
      continue;
    }
    shape[2 * nd] = out->sizes[d];
    shape[2 * nd + 1] = out->strides[d];
    ++nd;
  }
  if (nd == 0 || (nd == 1 && shape[1] == 1))
    nd = 0;  // dense: element i at offset + i
  s->outer_nd = nd;
  TSR_OCL_RETURN_IF_ERROR(tsr_ocl_const_buffer_create(
      plan->device, shape, sizeof(cl_long) * 2 * (size_t)(nd > 0 ? nd : 1), &s->shape));

  const int fp64 = (plan->device->caps & TSR_OCL_CAP_FP64) != 0;
  const char *extra = "";
  if (r->distribution == TSR_RNG_BERNOULLI) {
    // (x0 >> 8) * 2^-24 < p  <=>  (x0 >> 8) < ceil(p * 2^24), exactly (the
    // scaling is by a power of two); NaN and p <= 0 pass nothing.
    const double t = r->a * TSR_OCL_RNG_TWO_POW_24;
    cl_uint threshold = 0;
    if (t >= TSR_OCL_RNG_TWO_POW_24) {
      threshold = 1u << 24;
    } else if (t > 0) {
      threshold = (cl_uint)ceil(t);
    }
    ew_param_set(s, &threshold, sizeof(threshold));
  } else if (r->distribution == TSR_RNG_UNIFORM && out->dtype == TSR_FLOAT32 && !fp64) {
    cl_float scale = (float)(r->b * 0x1p-24);
    ew_param_set(s, &scale, sizeof(scale));
    extra = " -DTSR_RNG_EXACT=1";
  } else {
    cl_double a = r->a, b = r->b;
    ew_param_set(s, &a, sizeof(a));
    ew_param_set(s, &b, sizeof(b));
    if (out->dtype == TSR_FLOAT64)
      extra = " -DTSR_RNG_F64OUT=1";
  }
  char options[256];
  snprintf(options, sizeof(options), "-DDIST=%d -DTOUT=%s -DIDX=%s%s%s", (int)r->distribution,
           ew_cl_type(out->dtype), s->idx64 ? "ulong" : "uint", extra,
           nd == 0 ? " -DRNG_DENSE=1" : "");
  tsr_status status = tsr_ocl_kernel_create(plan->device, "rng", options, "rng_fill", &s->kernel);
  if (status != TSR_OK) {
    clReleaseMemObject(s->shape);
    s->shape = NULL;
    return status;
  }
  size_t local = TSR_OCL_EW_LOCAL;
  if (s->kernel->max_work_group_size > 0 && local > s->kernel->max_work_group_size) {
    local = s->kernel->max_work_group_size;
  }
  s->local = local;
  const uint64_t per_group = (uint64_t)local * TSR_OCL_RNG_VEC;
  s->global = (size_t)((s->count + per_group - 1) / per_group * local);
  return TSR_OK;
}

static tsr_status rng_execute(const tsr_ocl_plan *plan, const tsr_ocl_exec *exec) {
  const tsr_ocl_ew_state *s = ew_state_const(plan);
  if (s->kernel == NULL || s->global == 0)
    return TSR_OK;
  cl_uint n32 = (cl_uint)s->count;
  cl_ulong n64 = s->count, counter = s->counter, offset = exec->offset[0];
  cl_uint k0 = s->key[0], k1 = s->key[1];
  cl_int nd = s->outer_nd;
  tsr_ocl_arg args[8 + TSR_OCL_EW_MAX_PARAMS];
  int32_t na = 0;
  args[na++] = s->idx64 ? TSR_OCL_ARG(n64) : TSR_OCL_ARG(n32);
  args[na++] = TSR_OCL_ARG(counter);
  args[na++] = TSR_OCL_ARG(k0);
  args[na++] = TSR_OCL_ARG(k1);
  args[na++] = TSR_OCL_ARG(nd);
  args[na++] = TSR_OCL_ARG(s->shape);
  args[na++] = TSR_OCL_ARG(exec->mem[0]);
  args[na++] = TSR_OCL_ARG(offset);
  for (int32_t i = 0; i < s->num_params; ++i) {
    args[na++] = (tsr_ocl_arg){s->param_size[i], s->params[i]};
  }
  const size_t global = s->global, local = s->local;
  return tsr_ocl_launch(exec, s->kernel, 1, &global, &local, na, args);
}

// ---------------------------------------------------------------------------
// The table.

static const tsr_ocl_op_impl k_fill = {ew_supports, fill_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_copy = {ew_supports, copy_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_cast = {ew_supports, cast_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_unary = {ew_supports, unary_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_unary_backward = {ew_supports, unary_backward_init, ew_execute,
                                                 ew_fini};
static const tsr_ocl_op_impl k_binary = {ew_supports, binary_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_compare = {ew_supports, compare_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_where = {ew_supports, where_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_clamp = {ew_supports, clamp_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_sgd = {optim_supports, sgd_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_adam = {optim_supports, adam_init, ew_execute, ew_fini};
static const tsr_ocl_op_impl k_rng = {rng_supports, rng_init, rng_execute, ew_fini};

// The family's table, indexed by op id (NULL: not this family's). Static
// storage; read-only, so thread-safe.
const tsr_ocl_op_impl *const tsr_ocl_elementwise_ops[TSR_OP_COUNT] = {
    [TSR_OP_FILL] = &k_fill,
    [TSR_OP_COPY] = &k_copy,
    [TSR_OP_CAST] = &k_cast,
    [TSR_OP_UNARY] = &k_unary,
    [TSR_OP_UNARY_BACKWARD] = &k_unary_backward,
    [TSR_OP_BINARY] = &k_binary,
    [TSR_OP_COMPARE] = &k_compare,
    [TSR_OP_WHERE] = &k_where,
    [TSR_OP_CLAMP] = &k_clamp,
    [TSR_OP_SGD_UPDATE] = &k_sgd,
    [TSR_OP_ADAM_UPDATE] = &k_adam,
    [TSR_OP_RNG_FILL] = &k_rng,
};
