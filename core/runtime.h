// The core's objects, one header per concept; this header includes them all
// for the core's tests (the SDK sees none of them: it uses tessera/core.h and
// tessera/core_layer.h):
//   common.h    the public types, hot thread-locals, reference drops
//   registry.h  loaded plugins (process-wide) and the thread pool
//   device.h    a device as one context sees it
//   stream.h    streams, events, workspaces
//   storage.h   device buffers freed after every stream that used them
//   tensor.h    tensor handles (with the SDK's extension slot)
//   scope.h     per-thread scopes
//   context.h   the context and plugin discovery
//   dispatch.h  running ops, fallback, support probes
// A core source includes only the headers it needs.
#ifndef TESSERA_CORE_RUNTIME_H_
#define TESSERA_CORE_RUNTIME_H_

#include "common.h"
#include "context.h"
#include "device.h"
#include "dispatch.h"
#include "registry.h"
#include "scope.h"
#include "storage.h"
#include "stream.h"
#include "tensor.h"

#endif  // TESSERA_CORE_RUNTIME_H_
