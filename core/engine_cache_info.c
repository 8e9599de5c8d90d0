// tsr_engine_cache_info_get (tessera/engine_cache.h): the census of
// engine_cache.c for a context's thread count.
#include "context.h"
#include "engine_cache.h"
#include "error.h"
#include "tessera/engine_cache.h"

static _Thread_local char tls_folder[4096];

tsr_status tsr_engine_cache_info_get(const tsr_context *context, const char *plugin_name,
                                     tsr_engine_cache_info *out_info) {
  if (context == NULL || out_info == NULL || out_info->struct_size < sizeof(*out_info)) {
    return tsr_error_set(TSR_INVALID_ARGUMENT,
                         "engine_cache_info_get: context %s, out_info %s (struct_size %zu)",
                         context ? "set" : "NULL", out_info ? "set" : "NULL",
                         out_info ? out_info->struct_size : (size_t)0);
  }
  // The thread count plugins see: the host table's, which follows a
  // plugin's own thread runtime when one brings it.
  int32_t threads = tsr_context_thread_count(context);
  if (context->plugin_count > 0) {
    const tsr_host_api *host = &context->plugins[0]->host;
    threads = host->thread_count(host->ctx);
  }
  const char *off_reason = NULL;
  int32_t files = 0;
  int64_t decisions = 0;
  tsr_engine_cache_census(plugin_name, threads, tls_folder, sizeof(tls_folder), &off_reason, &files,
                          &decisions);
  out_info->folder = off_reason == NULL ? tls_folder : NULL;
  out_info->off_reason = off_reason;
  out_info->files = files;
  out_info->decisions = decisions;
  out_info->reserved = 0;
  return TSR_OK;
}
